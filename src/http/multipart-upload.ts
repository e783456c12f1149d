// Reads a transcription upload (docs/fleet.md#transcription): multipart/form-data parsed as it
// arrives (@fastify/busboy), the `file` part written straight to a temporary file — never held in
// memory — and the other fields collected. Past `limitBytes` of file the upload is refused (413) at
// once: the parser is detached and the rest of the body is not read, so the connection must close
// after the answer (the error carries `connection: close`). Before the file's first byte is written
// the upload is admitted (`admit`: its caller, model, QPM and a slot among the uploads in flight,
// judged from the fields sent before the file); a refusal stops it so too. The whole body must arrive
// within `timeoutMs` of the request (408). On every failure the file is removed here; on success the
// caller removes it with `remove()` once the request is over.
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Busboy, type BusboyFileStream } from "@fastify/busboy";
import type { Cancel } from "./cancel.js";
import { GatewayError, badRequest, toGatewayError } from "./errors.js";
import { spoolPath } from "./spool.js";

/** The file part's name, as OpenAI's API names it. */
export const FILE_FIELD = "file";

// Room for the fields and part headers beside the file in a declared Content-Length.
const FIELDS_ALLOWANCE = 1024 * 1024;
// No `files` limit: the parser's says nothing of the part, so a second file is refused by name below.
const LIMITS = { fields: 32, parts: 34, fieldSize: 64 * 1024, fieldNameSize: 100, headerPairs: 16 };

export interface UploadSource {
  headers: IncomingHttpHeaders;
  /** the request body */
  body: Readable;
}

export interface UploadOptions {
  /** the largest file accepted: `server.audioLimitBytes` */
  limitBytes: number;
  /** where the temporary file goes (default: the OS's temporary directory) */
  dir?: string;
  /** a shutdown stops an upload still arriving */
  cancel?: Cancel;
  /** the whole body's deadline, from now: `server.bodyTimeoutMs` */
  timeoutMs?: number;
  /** judges the upload from the fields sent before its file, before the file is written; resolves
   *  to what frees what it holds (a slot among the uploads in flight), rejects with the refusal */
  admit?: (fields: Array<[string, string]>) => Promise<() => void>;
  /** the file, in the words of a 413 (default "the audio file") */
  what?: string;
}

export interface AudioUpload {
  path: string;
  bytes: number;
  filename: string;
  mimeType: string;
  /** every field but the file, in the order sent (repeated names, e.g. `timestamp_granularities[]`, kept) */
  fields: Array<[string, string]>;
  /** removes the temporary file; safe to call more than once */
  remove(): Promise<void>;
}

export function fileTooLarge(limit: number, what = "the audio file"): GatewayError {
  return new GatewayError(413, "file_too_large", `file: ${what} is larger than ${limit} bytes.`, { param: FILE_FIELD, headers: { connection: "close" } });
}

const bodyTimeout = () =>
  new GatewayError(408, "request_timeout", "The request's body did not arrive in time.", { headers: { connection: "close" } });

/** The refusal, closing the connection after it: the rest of the upload is left unread. */
function closing(err: unknown): GatewayError {
  const e = toGatewayError(err);
  return new GatewayError(e.status, e.code, e.message, { type: e.type, param: e.param, headers: { ...e.headers, connection: "close" } });
}

/** The upload, its file on disk; a 4xx GatewayError for anything that is not one audio file under the limit. */
export function readAudioUpload(source: UploadSource, opts: UploadOptions): Promise<AudioUpload> {
  const type = String(source.headers["content-type"] ?? "");
  if (!/^multipart\/form-data\b/i.test(type)) {
    return Promise.reject(new GatewayError(415, "unsupported_media_type", "Content-Type must be multipart/form-data."));
  }
  const declared = Number(source.headers["content-length"] ?? NaN);
  if (declared > opts.limitBytes + FIELDS_ALLOWANCE) return Promise.reject(fileTooLarge(opts.limitBytes, opts.what));
  const path = spoolPath(opts.dir);
  const saving: Saving = {};
  return parse(source, type, path, opts, saving).catch(async (err: unknown) => {
    // removed only once closed: a file still being opened would otherwise appear after the removal
    saving.file?.stop();
    await saving.file?.closed;
    await rm(path, { force: true });
    saving.free?.();
    throw err;
  });
}

/** What an upload holds while it is read: its file being written, and what its admission holds. */
interface Saving {
  file?: SavedFile;
  free?: () => void;
}

function parse(source: UploadSource, type: string, path: string, opts: UploadOptions, saving: Saving): Promise<AudioUpload> {
  return new Promise((resolve, reject) => {
    if (opts.cancel?.aborted) return reject(shuttingDown());
    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({ headers: { ...source.headers, "content-type": type }, limits: { ...LIMITS, fileSize: opts.limitBytes } });
    } catch {
      return reject(badRequest("invalid_multipart", "The multipart body has no boundary in its Content-Type."));
    }
    const upload = new UploadParts(path, opts, saving, (err) => {
      // the rest of the body is left unread: the answer closes the connection
      source.body.unpipe(parser);
      source.body.pause();
      parser.destroy();
      stopWatching();
      reject(err);
    });
    const deadline = opts.timeoutMs === undefined ? undefined : setTimeout(() => source.body.readableEnded || upload.fail(bodyTimeout()), opts.timeoutMs);
    const onAbort = () => upload.fail(opts.cancel?.reason === "shutdown" ? shuttingDown() : uploadIncomplete());
    const onClose = () => {
      if (!source.body.readableEnded) onAbort();
    };
    const stopWatching = () => {
      clearTimeout(deadline);
      opts.cancel?.off("abort", onAbort);
      source.body.off("close", onClose);
      source.body.off("error", onAbort);
    };
    parser.on("field", (name, value, nameCut, valueCut) => upload.field(name, value, nameCut || valueCut));
    parser.on("file", (name, stream, filename, _encoding, mimeType) => upload.file(name, stream, filename, mimeType));
    parser.on("fieldsLimit", () => upload.fail(badRequest("invalid_request", `Too many fields: at most ${LIMITS.fields}.`)));
    parser.on("partsLimit", () => upload.fail(badRequest("invalid_request", `Too many parts: at most ${LIMITS.parts}.`)));
    parser.on("error", () => upload.fail(badRequest("invalid_multipart", "The multipart body is malformed or incomplete.")));
    parser.on("finish", () =>
      upload.finished().then((done) => {
        if (!done) return;
        stopWatching();
        resolve(done);
      }),
    );
    opts.cancel?.once("abort", onAbort);
    source.body.on("close", onClose);
    source.body.on("error", onAbort);
    source.body.pipe(parser);
  });
}

/** The parts of one upload as the parser finds them: the fields kept, the one file saved. */
class UploadParts {
  readonly #fields: Array<[string, string]> = [];
  #file: { filename: string; mimeType: string } | undefined;
  #settled = false;

  /** the file's admission, then its saving begun (or the upload refused) */
  #admitted: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    readonly opts: Pick<UploadOptions, "limitBytes" | "admit" | "what">,
    readonly saving: Saving,
    readonly onFail: (err: GatewayError) => void,
  ) {}

  /** Refuses the upload (once: later failures are consequences of the first). */
  fail(err: GatewayError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.onFail(err);
  }

  field(name: string, value: string, cut: boolean): void {
    if (cut) this.fail(badRequest("invalid_request", `${name}: the field is too long (at most ${LIMITS.fieldSize} bytes).`, name));
    else this.#fields.push([name, value]);
  }

  file(name: string, stream: BusboyFileStream, filename: string, mimeType: string): void {
    if (name !== FILE_FIELD || this.#file) {
      stream.resume();
      this.fail(badRequest("invalid_request", `${name}: send the audio as the one \`file\` field.`, name));
      return;
    }
    stream.once("limit", () => this.fail(fileTooLarge(this.opts.limitBytes, this.opts.what)));
    this.#file = { filename, mimeType };
    // the file waits, unread, while it is judged: the parser and the socket hold back the rest
    const admit = this.opts.admit?.([...this.#fields]) ?? Promise.resolve(() => {});
    this.#admitted = admit.then(
      (free) => {
        // refused meanwhile (the client left, the deadline passed): its failure path has run
        if (this.#settled) {
          free();
          return void stream.resume();
        }
        this.saving.free = free;
        this.#save(stream);
      },
      (err: unknown) => {
        stream.resume();
        this.fail(closing(err));
      },
    );
  }

  #save(stream: BusboyFileStream): void {
    this.saving.file = saveFile(stream, this.path);
    // the disk failing (no room, no spool directory) is the gateway's fault; anything else, the upload's
    this.saving.file.saved.catch((err: { syscall?: unknown }) =>
      this.fail(typeof err?.syscall === "string" ? storageFailed() : badRequest("invalid_request", "file: the upload could not be stored.", FILE_FIELD)),
    );
  }

  /** The whole body was parsed: the upload once its file is on disk, or undefined when refused. */
  async finished(): Promise<AudioUpload | undefined> {
    await this.#admitted;
    const saved = this.saving.file;
    if (this.#settled) return undefined;
    if (!this.#file || !saved) {
      this.fail(badRequest("invalid_request", "file is required: send the audio as the `file` field.", FILE_FIELD));
      return undefined;
    }
    const bytes = await Promise.all([saved.saved, saved.closed]).then(([b]) => b, () => undefined);
    if (this.#settled || bytes === undefined) return undefined;
    if (bytes === 0) {
      this.fail(badRequest("empty_file", "file: the audio file is empty.", FILE_FIELD));
      return undefined;
    }
    this.#settled = true;
    const { path, saving } = this;
    const remove = () => rm(path, { force: true }).finally(() => saving.free?.());
    return { path, bytes, ...this.#file, fields: this.#fields, remove };
  }
}

interface SavedFile {
  /** the bytes written, once the part has ended */
  saved: Promise<number>;
  /** the file's descriptor is closed (after success, failure or stop) */
  closed: Promise<void>;
  stop(): void;
}

/** Writes the file part to `path`, readable by this process's user only. */
function saveFile(stream: BusboyFileStream, path: string): SavedFile {
  const out = createWriteStream(path, { flags: "wx", mode: 0o600 });
  const closed = new Promise<void>((resolve) => out.once("close", resolve));
  const saved = pipeline(stream, out).then(() => out.bytesWritten);
  saved.catch(() => undefined); // read by the parser's handlers; a stop is not a failure to report twice
  // both ends: the parser's file stream, once destroyed, may never tell the pipeline it closed
  const stop = () => {
    stream.destroy();
    out.destroy();
  };
  return { saved, closed, stop };
}

const shuttingDown = () =>
  new GatewayError(503, "shutting_down", "The gateway is shutting down; retry the request.", { type: "api_error", headers: { "Retry-After": "1" } });

const storageFailed = () => new GatewayError(500, "upload_storage_failed", "The gateway could not store the upload; retry later.", { type: "server_error" });

const uploadIncomplete = () => badRequest("upload_incomplete", "The upload ended before the multipart body was complete.");
