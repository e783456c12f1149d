// The upstream's transcription body (docs/fleet.md#transcription): multipart/form-data written
// around the temporary file, read from disk as it is sent. Each attempt of a failover opens a fresh
// stream of the same bytes, and the length is known up front, so the upstream gets a Content-Length
// (a model server behind a simple HTTP stack may not take a chunked upload).
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { Readable } from "node:stream";

export interface MultipartFile {
  path: string;
  bytes: number;
  filename: string;
  mimeType: string;
}

export interface MultipartBody {
  contentType: string;
  contentLength: number;
  /** a new stream of the whole body: one per attempt */
  open(): Readable;
}

const CRLF = "\r\n";

/** `fields` first, in order, then the file as the `file` field. */
export function createMultipartBody(fields: Array<[string, string]>, file: MultipartFile): MultipartBody {
  const boundary = `----sluice${randomBytes(16).toString("hex")}`;
  let head = "";
  for (const [name, value] of fields) {
    head += `--${boundary}${CRLF}Content-Disposition: form-data; name="${escapeName(name)}"${CRLF}${CRLF}${value}${CRLF}`;
  }
  head += `--${boundary}${CRLF}Content-Disposition: form-data; name="file"; filename="${escapeName(file.filename || "audio")}"${CRLF}`;
  head += `Content-Type: ${safeType(file.mimeType)}${CRLF}${CRLF}`;
  const before = Buffer.from(head, "utf8");
  const after = Buffer.from(`${CRLF}--${boundary}--${CRLF}`, "utf8");
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    contentLength: before.length + file.bytes + after.length,
    open: () => Readable.from(parts(before, file.path, after), { objectMode: false }),
  };
}

async function* parts(before: Buffer, path: string, after: Buffer): AsyncGenerator<Buffer> {
  yield before;
  // a stream destroyed early (the upstream failed) closes the file: the loop's return closes it
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) yield chunk as Buffer;
  yield after;
}

/** A name or filename as browsers write it in a part header (the WHATWG form encoding). */
function escapeName(name: string): string {
  return name.replace(/\r/g, "%0D").replace(/\n/g, "%0A").replace(/"/g, "%22");
}

/** The part's type, or a neutral one when the client's is not a plain `type/subtype`. */
function safeType(type: string): string {
  return /^[\w.+-]+\/[\w.+-]+$/.test(type) ? type : "application/octet-stream";
}
