// The gateway's one logger (pino): lifecycle lines, request lines and errors alike, as JSON lines on
// stdout (or `server.log.destination`). Writes are asynchronous and batched; the shutdown and a fatal
// start wait for close(), and pino writes what is left synchronously on any other exit, so nothing
// logged is lost. Human-readable lines (pino-pretty) only when asked: `--pretty`, or a terminal as
// the destination — and only where pino-pretty is installed.
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { pino, type DestinationStream, type Logger as PinoLogger } from "pino";

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

export interface LogOptions {
  level: LogLevel;
  /** `stdout`, `stderr`, or a file path that lines are appended to */
  destination: string;
  /** pino-pretty's lines instead of JSON; absent: pretty when the destination is a terminal */
  pretty?: boolean;
}

export type Logger = PinoLogger & {
  /** Resolves once every line logged so far is written (a file destination is then closed). */
  close(): Promise<void>;
};

/** Lines are written once this much is buffered, or FLUSH_AFTER_MS after the first of them. */
// 64 KB: a write of 4 KB cost 26 µs of CPU, one of 64 KB 44 µs (about 2 µs a request saved at load)
const BATCH_BYTES = 65_536;
const FLUSH_AFTER_MS = 200;
/** The most one write(2) takes: a burst is written in few calls, not in slices of 16 KB. */
const MAX_WRITE_BYTES = 1024 * 1024;
/** Past this much unwritten output (a stalled pipe or disk) lines are dropped, and counted. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** pino's destination, with the state its typings leave out */
type SonicBoom = ReturnType<typeof pino.destination> & { readonly fd: number; readonly destroyed: boolean };

export function createLogger(opts: LogOptions): Logger {
  const out = openOutput(opts);
  const logger = pino(
    {
      level: opts.level,
      base: { pid: process.pid },
      timestamp: isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // what is already plain (errorFields' output) is kept as it is
      serializers: { err: (err: unknown) => (err instanceof Error ? errorFields(err) : err) },
    },
    out.stream,
  );
  out.onDropped = (count) => logger.warn({ count }, "log lines dropped: the log destination is not keeping up");
  if (out.notice) logger.warn(out.notice);
  return Object.assign(logger, { close: out.close });
}

/** pino's ISO time, formatted once per millisecond: a busy gateway logs many lines in each. */
let lastMs = 0;
let lastTime = "";
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

export interface ErrorFields {
  type: string;
  code?: string;
  message: string;
  stack?: string;
  /** the error it stands for (a GatewayError's `cause`), told the same way, one level deep */
  cause?: Omit<ErrorFields, "cause">;
}

/** What an error's log line carries: names, codes, message and stack — never its other properties,
 *  which may hold request data; and so of its cause. */
export function errorFields(err: unknown): ErrorFields {
  if (!(err instanceof Error)) return { type: typeof err, message: String(err) };
  const fields: ErrorFields = ownFields(err);
  if (err.cause instanceof Error) fields.cause = ownFields(err.cause);
  return fields;
}

const ownFields = (err: Error): Omit<ErrorFields, "cause"> => ({ type: err.name, code: (err as NodeJS.ErrnoException).code, message: err.message, stack: err.stack });

function openOutput(opts: LogOptions): Output {
  if (opts.level === "silent") return { stream: { write() {} }, close: () => Promise.resolve() };
  const pretty = opts.pretty ?? isTerminal(opts.destination);
  return pretty ? prettyOutput(opts.destination) : jsonOutput(opts.destination);
}

interface Output {
  stream: DestinationStream;
  close(): Promise<void>;
  onDropped?: (count: number) => void;
  /** said once the logger exists (a pretty output that could not be had) */
  notice?: string;
}

function jsonOutput(destination: string): Output {
  const boom = pino.destination({
    ...fileOptions(destination),
    sync: false,
    minLength: BATCH_BYTES,
    maxWrite: MAX_WRITE_BYTES,
    maxLength: MAX_BUFFERED_BYTES,
    // buffers, not one growing string: sonic-boom measures a string batch's bytes at every write
    contentMode: "buffer",
  }) as SonicBoom;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let dropped = 0;
  const output: Output = {
    stream: {
      write(line: string) {
        if (closed) return;
        boom.write(Buffer.from(line) as unknown as string);
        // a quiet gateway's lines do not wait for the batch to fill
        timer ??= setTimeout(flush, FLUSH_AFTER_MS).unref();
      },
    },
    close: () => {
      if (closed) return Promise.resolve();
      reportDropped();
      closed = true;
      clearTimeout(timer);
      return fdOf(destination) === undefined ? endFile(boom) : flushed(boom);
    },
  };
  function flush() {
    timer = undefined;
    if (boom.destroyed) return;
    if (boom.fd < 0) timer = setTimeout(flush, FLUSH_AFTER_MS).unref(); // a file still opening
    else boom.flush();
  }
  function reportDropped() {
    if (dropped === 0) return;
    const count = dropped;
    dropped = 0;
    output.onDropped?.(count);
  }
  boom.on("drop", () => void (dropped += 1));
  boom.on("drain", reportDropped);
  // a broken log file must not take the gateway down; say so once where an operator will see it
  let reported = false;
  boom.on("error", (err: Error) => {
    if (!reported) process.stderr.write(`sluice: log destination ${destination} failed: ${err.message}\n`);
    reported = true;
  });
  return output;
}

/** pino-pretty is a development dependency: a production install may lack it, and then logs JSON. */
function prettyOutput(destination: string): Output {
  let prettify: (line: string) => string;
  try {
    const { prettyFactory } = createRequire(import.meta.url)("pino-pretty") as typeof import("pino-pretty");
    prettify = prettyFactory({ colorize: isTerminal(destination), translateTime: "SYS:HH:MM:ss.l", ignore: "pid" });
  } catch {
    return { ...jsonOutput(destination), notice: "pretty logs need the pino-pretty package (a development dependency): logging JSON" };
  }
  // pretty lines are for a person watching: written at once, in order
  const boom = pino.destination({ ...fileOptions(destination), sync: true }) as SonicBoom;
  return {
    stream: { write: (line: string) => void (boom.destroyed || boom.write(prettify(line))) },
    close: () => (fdOf(destination) === undefined ? endFile(boom) : Promise.resolve()),
  };
}

/** Where lines go: stdout or stderr, or a file appended to — readable by the gateway's user only,
 *  created 0600 in a folder created 0700 (request lines name keys and apps: docs/operations.md#files). */
function fileOptions(destination: string): { dest: string | number; append: true; mode?: number } {
  const fd = fdOf(destination);
  if (fd !== undefined) return { dest: fd, append: true };
  try {
    mkdirSync(dirname(destination), { recursive: true, mode: 0o700 });
  } catch {
    // opening the file then fails too, reported by the destination's error handler
  }
  return { dest: destination, append: true, mode: 0o600 };
}

function fdOf(destination: string): number | undefined {
  if (destination === "stdout") return 1;
  if (destination === "stderr") return 2;
  return undefined;
}

function isTerminal(destination: string): boolean {
  if (destination === "stdout") return process.stdout.isTTY === true;
  if (destination === "stderr") return process.stderr.isTTY === true;
  return false;
}

function flushed(boom: SonicBoom): Promise<void> {
  if (boom.destroyed) return Promise.resolve();
  return new Promise((resolve) => boom.flush(() => resolve()));
}

function endFile(boom: SonicBoom): Promise<void> {
  if (boom.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    boom.once("close", () => resolve());
    boom.once("error", () => resolve());
    boom.end();
  });
}
