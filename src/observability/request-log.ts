// The request log: one JSON line per finished request (and a few operational events), written to
// stdout, stderr or an appended file. It carries names and numbers only — never a key, token or
// message content — so it is safe to ship to any log store.
import { createWriteStream, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Writable } from "node:stream";
import type { Observer, RequestRecord, ShareCallbackOutcome } from "./observer.js";

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
type LineLevel = Exclude<LogLevel, "silent">;

export interface RequestLogOptions {
  level: LogLevel;
  /** `stdout`, `stderr`, or a file path that lines are appended to */
  destination: string;
}

export type RequestLog = Observer & { close(): Promise<void> };

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
/** Past this much unwritten output (a stalled disk) lines are dropped rather than held in memory. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const FAILED_CALLBACK: ShareCallbackOutcome[] = ["error", "retry", "dropped"];

export function createRequestLog(opts: RequestLogOptions): RequestLog {
  const threshold = RANK[opts.level];
  const sink = opts.level === "silent" ? undefined : openSink(opts.destination);

  const write = (level: LineLevel, msg: string, fields: Record<string, unknown>) => {
    if (!sink || RANK[level] < threshold) return;
    sink.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + "\n");
  };

  return {
    requestStarted() {},

    requestFinished(r: RequestRecord) {
      write(levelOf(r.status), "request", {
        requestId: r.requestId,
        route: r.route,
        method: r.method,
        status: r.status,
        app: r.appId,
        keyName: r.keyName,
        shareId: r.shareId,
        model: r.model,
        channel: r.channel,
        stream: r.stream,
        inputTokens: r.inputTokens,
        outputTokens: r.outputTokens,
        points: r.points,
        durationMs: r.durationMs,
        ttftMs: r.ttftMs,
        errorCode: r.errorCode,
        finishReason: r.finishReason,
        upstreamMessage: r.upstreamMessage,
      });
    },

    upstreamFinished(channel, model, outcome) {
      write("debug", "upstream", { channel, model, outcome });
    },

    channelState(channel, up) {
      write(up ? "info" : "warn", up ? "channel up" : "channel down", { channel });
    },

    shareCallback(kind, outcome) {
      write(FAILED_CALLBACK.includes(outcome) ? "warn" : "debug", "share callback", { kind, outcome });
    },

    upstreamAttempt(channel, outcome) {
      write("debug", "upstream attempt", { channel, outcome });
    },

    budgetRefused() {},

    channelQueue() {},

    configReloaded(ok, notes) {
      if (ok) write("info", "config reloaded", notes.length > 0 ? { notes } : {});
      else write("error", "config reload refused: the running config is kept", { problems: notes });
    },

    processError(kind) {
      write("error", "process error", { kind });
    },

    close: () => sink?.close() ?? Promise.resolve(),
  };
}

function levelOf(status: number): LineLevel {
  if (status >= 500) return "error";
  if (status >= 400) return "warn";
  return "info";
}

interface Sink {
  write(line: string): void;
  close(): Promise<void>;
}

function openSink(destination: string): Sink {
  if (destination === "stdout") return streamSink(process.stdout, false);
  if (destination === "stderr") return streamSink(process.stderr, false);
  mkdirSync(dirname(destination), { recursive: true });
  const file = createWriteStream(destination, { flags: "a" });
  // a broken log file must not take the gateway down; say so once where an operator will see it
  let reported = false;
  file.on("error", (err) => {
    if (!reported) process.stderr.write(`sluice: request log ${destination} failed: ${err.message}\n`);
    reported = true;
  });
  return streamSink(file, true);
}

function streamSink(stream: Writable, owned: boolean): Sink {
  let dropped = 0;
  stream.on("drain", () => {
    if (dropped === 0) return;
    const line = { time: new Date().toISOString(), level: "warn", msg: "log lines dropped", count: dropped };
    dropped = 0;
    stream.write(JSON.stringify(line) + "\n");
  });

  return {
    write(line) {
      if (stream.destroyed || stream.writableEnded) return;
      if (stream.writableLength > MAX_BUFFERED_BYTES) dropped += 1;
      else stream.write(line);
    },
    close() {
      if (!owned || stream.destroyed || stream.writableEnded) return Promise.resolve();
      return new Promise((resolve) => stream.end(resolve));
    },
  };
}
