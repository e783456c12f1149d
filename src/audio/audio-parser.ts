// Reads an uploaded file's format with music-metadata in a worker thread (docs/fleet.md#transcription):
// its parsers run synchronous loops over crafted bytes (256 KiB of 0xFF reads as an MPEG frame sync
// at every byte: 1.9 s of CPU; a file that opens no container is refused before, ./audio-sniff.ts,
// but an ID3 tag before the same bytes is not), so none of that runs on the event loop. A worker
// parses one file at a time within PARSE_BUDGET_MS of wall time from when it takes it, and is
// terminated past it (or past its memory limit); at most MAX_PARSERS files are parsed at once, the
// others wait their turn (not counted against their budget). Idle workers are kept for the next files.
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";

/** What music-metadata says of a file's format. */
export interface ParsedFormat {
  duration?: number;
  container?: string;
  codec?: string;
  hasAudio?: boolean;
}

/** The format; or the file was not audio the parser could read, within its budget or at all. */
export type ParseOutcome = { format: ParsedFormat } | { refused: "unreadable" | "too_slow" };

/** A real 25 MiB file's headers take music-metadata a few ms (a fresh worker's first, under 20 ms). */
export const PARSE_BUDGET_MS = 250;
const MAX_PARSERS = Math.max(1, Math.min(2, availableParallelism() - 1));
const START_TIMEOUT_MS = 10_000;
const MEMORY_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 };

// The worker: a script, not a module of src/, so that it runs as it is under the built gateway and
// under the tests alike. A failure of the disk (an `E…` code) is the gateway's, reported as such.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
import(workerData.musicMetadata).then(({ parseFile }) => {
  parentPort.on("message", async (path) => {
    try {
      const { format } = await parseFile(path, { duration: false, skipCovers: true });
      parentPort.postMessage({ format: { duration: format.duration, container: format.container, codec: format.codec, hasAudio: format.hasAudio } });
    } catch (err) {
      const code = err && typeof err.code === "string" && /^E[A-Z]+$/.test(err.code) ? err.code : undefined;
      parentPort.postMessage({ failed: code ?? "unreadable" });
    }
  });
  parentPort.postMessage("ready");
});`;

type Reply = { format: ParsedFormat } | { failed: string };

export class AudioParsers {
  readonly #idle: Worker[] = [];
  readonly #waiting: Array<() => void> = [];
  #parsing = 0;

  constructor(
    readonly budgetMs = PARSE_BUDGET_MS,
    readonly max = MAX_PARSERS,
  ) {}

  /** The file's format, parsed in a worker; throws an error with the code of a failing disk. */
  async parse(path: string): Promise<ParseOutcome> {
    if (this.#parsing >= this.max) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#parsing++;
    try {
      const worker = this.#idle.pop() ?? (await startWorker());
      const reply = await ask(worker, path, this.budgetMs);
      if (reply === undefined || ("failed" in reply && reply.failed === "crashed")) {
        void worker.terminate();
        return { refused: reply === undefined ? "too_slow" : "unreadable" };
      }
      this.#idle.push(worker);
      if ("format" in reply) return reply;
      if (reply.failed === "unreadable") return { refused: "unreadable" };
      throw Object.assign(new Error(`reading the upload failed: ${reply.failed}`), { code: reply.failed });
    } finally {
      this.#parsing--;
      this.#waiting.shift()?.();
    }
  }
}

/** A worker that has loaded music-metadata. */
async function startWorker(): Promise<Worker> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { musicMetadata: import.meta.resolve("music-metadata") }, resourceLimits: MEMORY_LIMITS });
  worker.unref(); // an idle parser never holds the process
  worker.on("error", () => undefined); // a failure is read from the exit that follows it
  const timer = setTimeout(() => void worker.terminate(), START_TIMEOUT_MS);
  let ready: () => void = () => {};
  let exited: (code: number) => void = () => {};
  try {
    await new Promise<void>((resolve, reject) => {
      ready = resolve;
      exited = (code) => reject(new Error(`the audio parser exited (${code}) while starting`));
      worker.once("message", ready);
      worker.once("exit", exited);
    });
  } finally {
    clearTimeout(timer);
    // only these: removing every listener would stop the worker's messages too
    worker.off("message", ready);
    worker.off("exit", exited);
  }
  return worker;
}

/** The worker's reply for `path`, or undefined past `budgetMs` (the worker is then the caller's to end). */
function ask(worker: Worker, path: string, budgetMs: number): Promise<Reply | undefined> {
  return new Promise((resolve) => {
    const done = (reply: Reply | undefined) => {
      clearTimeout(timer);
      worker.off("message", done);
      worker.off("exit", crashed);
      resolve(reply);
    };
    // out of memory, or killed: the file's doing, as far as the client is concerned
    const crashed = () => done({ failed: "crashed" });
    const timer = setTimeout(() => done(undefined), budgetMs);
    worker.on("message", done);
    worker.once("exit", crashed);
    worker.postMessage(path);
  });
}
