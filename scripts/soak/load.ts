// The soak's clients: `concurrency` requests always in flight until the deadline (each finished one
// is followed by the next), mostly streams, some aborted by the client mid-stream. Each request's
// end is recorded: how it ended as the client saw it and the tokens of the text it received.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { StringDecoder } from "node:string_decoder";
import { setTimeout as sleep } from "node:timers/promises";
import { Pool } from "undici";
import { countText } from "../../src/tokens/counter.js";
import { ID_PREFIX, SOAK_KEY, SOAK_MODEL, SOAK_TOKENIZER, between } from "./setup.js";

/** How a request ended for the client. */
export type ClientOutcome =
  | "ok" // 200 and a complete answer ([DONE], or a whole JSON completion)
  | "aborted" // the client went away mid-stream
  | "cut" // 200, then an error event after some of the answer
  | "refused" // an error status before the first byte
  | "truncated" // a 200 stream that ended without [DONE] and without an error event
  | "dropped" // the connection was closed under the request before any answer (see `oneRequest`)
  | "transport" // a socket error the client did not cause, after the answer began
  | "timeout"; // no end within REQUEST_TIMEOUT_MS

export interface ClientRecord {
  id: number;
  stream: boolean;
  outcome: ClientOutcome;
  status: number;
  /** the error's code (refused, cut) or the transport error's */
  code?: string;
  /** tokens of the answer text received */
  received: number;
}

export interface LoadOptions {
  url: string;
  concurrency: number;
  durationMs: number;
  /** share of requests that stream */
  streamShare: number;
  /** share of streams the client aborts after 1-30 content chunks */
  abortShare: number;
}

export interface LoadResult {
  records: ClientRecord[];
  /** requests in flight, sampled each second from the end of the ramp-up to the last start */
  inflightSamples: number[];
  /** the client's own event-loop delay, ms (p99, max): high values mean the client was the bottleneck */
  loopDelayMs: { p99: number; max: number };
}

const PATH = "/v1/chat/completions";
const HEADERS = { "content-type": "application/json", authorization: `Bearer ${SOAK_KEY}` };
const REQUEST_TIMEOUT_MS = 120_000;
const RAMP_MS = 3_000;
const QUESTIONS = ["Tell me about rivers.", "Summarise the meeting, please.", "What is a token?", "Écris un poème sur la mer 🌊", "用一句话解释网关。"];

/** Runs the load. Once no new request will start and every started one has its response headers,
 *  `onStartsEnded` runs (the soak sends SIGTERM there: streams in flight drain, none is refused). */
export async function runLoad(opts: LoadOptions, onStartsEnded: () => Promise<void>): Promise<LoadResult> {
  const pool = new Pool(opts.url, { connections: opts.concurrency + 50, headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });
  const records: ClientRecord[] = [];
  const inflightSamples: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let starting = true;
  let nextId = 1;
  let inflight = 0;
  const waiting = createCountdown();
  let sampler: NodeJS.Timeout | undefined;
  const sampling = setTimeout(() => (sampler = setInterval(() => inflightSamples.push(inflight), 1_000)), RAMP_MS);

  async function worker(delayMs: number): Promise<void> {
    await sleep(delayMs); // spread the first requests over RAMP_MS, as clients arrive
    while (starting) {
      inflight++;
      records.push(await oneRequest(pool, nextId++, opts, waiting));
      inflight--;
    }
  }
  const workers = Array.from({ length: opts.concurrency }, (_, i) => worker((i * RAMP_MS) / opts.concurrency));
  await sleep(opts.durationMs);
  starting = false;
  clearTimeout(sampling);
  clearInterval(sampler);
  await waiting.zero();
  await onStartsEnded();
  await Promise.all(workers);
  loop.disable();
  await pool.close();
  return { records, inflightSamples, loopDelayMs: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 } };
}

/** Requests waiting for their response headers; `zero()` resolves when none is. */
function createCountdown() {
  let count = 0;
  let waiters: Array<() => void> = [];
  return {
    up: () => void count++,
    down() {
      if (--count > 0) return;
      for (const resolve of waiters) resolve();
      waiters = [];
    },
    zero: () => (count === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
  };
}

/**
 * One request and how it ended. "dropped": HTTP/1.1's race between a server closing a connection it
 * holds idle (keep-alive timeout, or `headersTimeoutMs` on one that never carried a request, with a
 * 408) and a client sending on it at that moment — a reset, or the 408, before any answer. Clients
 * retry these (RFC 9112 §9.3.1; the OpenAI SDKs retry connection errors and 408); the soak counts them.
 */
async function oneRequest(pool: Pool, id: number, opts: LoadOptions, waiting: ReturnType<typeof createCountdown>): Promise<ClientRecord> {
  const stream = Math.random() < opts.streamShare;
  const abortAfter = stream && Math.random() < opts.abortShare ? between([1, 30]) : 0;
  const question = QUESTIONS[id % QUESTIONS.length]!;
  const body = JSON.stringify({ model: SOAK_MODEL, stream, chatId: `${ID_PREFIX}${id}`, messages: [{ role: "user", content: `${ID_PREFIX}${id} ${question}` }] });
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error("timeout")), REQUEST_TIMEOUT_MS);
  const seen = { text: "", chunks: 0, aborted: false };
  const record = (outcome: ClientOutcome, status: number, code?: string): ClientRecord => ({ id, stream, outcome, status, code, received: countText(seen.text, SOAK_TOKENIZER) });
  waiting.up();
  let headed = false;
  try {
    const res = await pool.request({ method: "POST", path: PATH, headers: HEADERS, body, signal: abort.signal });
    headed = true;
    waiting.down();
    if (res.statusCode !== 200) {
      const error = (await res.body.json().catch(() => ({}))) as { error?: { code?: string } };
      const code = error.error?.code ?? "no_error_body";
      return record(code === "request_timeout" ? "dropped" : "refused", res.statusCode, code);
    }
    if (!stream) {
      const completion = (await res.body.json()) as { choices?: Array<{ message?: { content?: string } }> };
      seen.text = completion.choices?.[0]?.message?.content ?? "";
      return record(seen.text ? "ok" : "truncated", 200);
    }
    const end = await readStream(res.body, seen, () => {
      if (abortAfter > 0 && seen.chunks >= abortAfter) {
        seen.aborted = true;
        abort.abort();
      }
    });
    return record(end.outcome, 200, end.code);
  } catch (err) {
    if (seen.aborted) return record("aborted", 200);
    if (abort.signal.aborted) return record("timeout", 0);
    return record(headed ? "transport" : "dropped", 0, (err as { code?: string }).code ?? String(err));
  } finally {
    if (!headed) waiting.down();
    clearTimeout(timer);
  }
}

/** Reads SSE events to the end of the body, collecting the content; calls `onChunk` after each
 *  content chunk. The outcome is set by `[DONE]` or an error event, whichever comes first. */
async function readStream(body: AsyncIterable<Buffer>, seen: { text: string; chunks: number }, onChunk: () => void): Promise<{ outcome: ClientOutcome; code?: string }> {
  const decoder = new StringDecoder("utf8");
  let end: { outcome: ClientOutcome; code?: string } | undefined;
  let pending = "";
  for await (const bytes of body) {
    pending += decoder.write(bytes);
    for (let cut = pending.indexOf("\n\n"); cut >= 0 && !end; cut = pending.indexOf("\n\n")) {
      const event = pending.slice(0, cut);
      pending = pending.slice(cut + 2);
      const data = event.startsWith("data: ") ? event.slice(6) : undefined;
      if (data === undefined) continue;
      if (data === "[DONE]") {
        end = { outcome: "ok" };
        break;
      }
      const parsed = JSON.parse(data) as { error?: { code?: string }; choices?: Array<{ delta?: { content?: string } }> };
      if (parsed.error) end = { outcome: "cut", code: parsed.error.code };
      const content = parsed.choices?.[0]?.delta?.content;
      if (content) {
        seen.text += content;
        seen.chunks++;
        onChunk();
      }
    }
    if (end) pending = "";
  }
  return end ?? { outcome: "truncated" };
}
