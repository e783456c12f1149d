// A misbehaving upstream (issue "Hardening", item 6; docs/api.md#streams, docs/api.md#upstream-failures):
// the gateway runs as a child process (a crash shows as an exit, not as a dead test worker) in front of
// test/support/bad-upstream.ts. For every misbehaviour, asked plainly, streamed and streamed in detail
// mode, the client gets the status of docs/api.md#upstream-failures with an OpenAI error body, or — once
// its stream has begun — a stream ending with an error event; never a silent clean end, never a hang. After
// each, the process is alive and answers normally.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BAD_SECRET, BAD_TEXT, HUGE_BYTES, LEAKY_KEY, startBadUpstream, type BadUpstream } from "./support/bad-upstream.js";
import { SOURCE_ENTRY, createMainProcesses, freePort, type MainProcess } from "./support/main-process.js";

const APP_KEY = "sk-bad-upstream-app-key-1";
const CHANNEL_KEY = "bad-upstream-channel-key-1";
const MODES = ["json", "stream", "detail"] as const;
type Mode = (typeof MODES)[number];
/** One channel (so one breaker) per mode: the modes of a case run at the same time. */
const MODEL: Record<Mode, string> = { json: "m-json", stream: "m-stream", detail: "m-detail" };
const TIMEOUTS = { firstByteTimeoutMs: 1000, idleTimeoutMs: 1000, totalTimeoutMs: 3000, maxAnswerBytes: 1024 * 1024 };
const CLIENT_TIMEOUT_MS = 4000;
const NORMAL_TIMEOUT_MS = 3000;

const processes = createMainProcesses();
let upstream: BadUpstream;
let gw: MainProcess;
let dir: string;
const startGateway = async () => (gw = await processes.startMain(SOURCE_ENTRY, ["--config", join(dir, "config.json")]));

beforeAll(async () => {
  upstream = await startBadUpstream();
  dir = mkdtempSync(join(tmpdir(), "sluice-bad-upstream-"));
  const config = {
    server: { host: "127.0.0.1", log: { level: "silent" } },
    store: { driver: "memory" },
    routing: { maxAttempts: 1 },
    channels: [
      ...MODES.map((mode) => ({ name: `c-${mode}`, baseUrl: upstream.url, key: CHANNEL_KEY, models: [MODEL[mode]], ...TIMEOUTS })),
      { name: "c-dead", baseUrl: `http://127.0.0.1:${await freePort()}`, key: CHANNEL_KEY, models: ["m-dead"], ...TIMEOUTS },
    ],
    llmModels: [...Object.values(MODEL), "m-dead"].map((model) => ({ model, maxContext: 4000, maxResponse: 1000 })),
    apps: [{ id: "a1", model: "m-json", models: [...Object.values(MODEL), "m-dead"] }],
    apiKeys: [{ name: "k1", kind: "app", appId: "a1", key: APP_KEY }],
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  await startGateway();
}, 30_000);
afterAll(async () => {
  await processes.killAll();
  await upstream?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Asking, and judging the answer.

interface Reply {
  status: number;
  contentType: string;
  retryAfter: string | null;
  text: string;
}

async function ask(mode: Mode, play: string, model = MODEL[mode], timeoutMs = CLIENT_TIMEOUT_MS): Promise<Reply | string> {
  const body = { model, stream: mode !== "json", ...(mode === "detail" ? { detail: true } : {}), messages: [{ role: "user", content: play }] };
  try {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, contentType: res.headers.get("content-type") ?? "", retryAfter: res.headers.get("retry-after"), text };
  } catch (err) {
    const name = (err as Error).name;
    return name === "TimeoutError" ? `no complete answer within ${timeoutMs} ms (a hang)` : `the request failed: ${name} ${(err as Error).message}`;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

interface SseFrame {
  event?: string;
  data: string;
}

/** SSE as a client reads it: `data:` with or without its space, CRLF or LF, comments skipped. */
function parseSse(text: string): SseFrame[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((block) => {
      const frame: SseFrame = { data: "" };
      let data: string[] | undefined;
      for (const line of block.split(/\r?\n/)) {
        const [, field, value = ""] = /^([^:]*):? ?(.*)$/.exec(line) ?? [];
        if (field === "event") frame.event = value;
        else if (field === "data") (data ??= []).push(value);
      }
      frame.data = data?.join("\n") ?? "";
      return data || frame.event ? frame : undefined;
    })
    .filter((f): f is SseFrame => f !== undefined);
}

const excerpt = (r: Reply) => `${r.status} ${r.text.slice(0, 200).replace(/\n/g, "\\n")}`;

/** The problem with an OpenAI error object, if any. */
function errorObjectProblem(error: unknown, exact: boolean): string | undefined {
  if (!error || typeof error !== "object") return "no error object";
  const e = error as Record<string, unknown>;
  if (exact && Object.keys(e).sort().join() !== "code,message,param,type") return `error keys are ${Object.keys(e).sort().join()}`;
  if (typeof e.message !== "string" || e.message.trim() === "") return "error.message is not a non-empty string";
  if (typeof e.code !== "string" || e.code === "") return "error.code is not a non-empty string";
  if (typeof e.type !== "string" || e.type === "") return "error.type is not a non-empty string";
  return undefined;
}

const isErrorFrame = (mode: Mode, f: SseFrame | undefined) => (mode === "detail" ? f?.event === "error" : (parseJson(f?.data ?? "") as { error?: unknown })?.error !== undefined);

/** A begun stream must end with an error event (`event: error` in detail mode) and hold no [DONE]. */
function streamErrorProblem(mode: Mode, r: Reply): string | undefined {
  if (!r.contentType.startsWith("text/event-stream")) return `200 without an event stream: ${excerpt(r)}`;
  const frames = parseSse(r.text);
  if (!isErrorFrame(mode, frames.at(-1))) return `the stream did not end with ${mode === "detail" ? "event: error" : "an error data event"} (last: ${JSON.stringify(frames.at(-1) ?? null).slice(0, 160)})`;
  if (frames.some((f) => f.data === "[DONE]")) return "the stream holds [DONE] although the answer failed";
  return errorObjectProblem((parseJson(frames.at(-1)!.data) as { error?: unknown })?.error, false);
}

/** The answer's text from a completion or a stream; undefined when it is neither. */
function answerText(mode: Mode, r: Reply): string | undefined {
  if (mode === "json") return (parseJson(r.text) as { choices?: Array<{ message?: { content?: string } }> })?.choices?.[0]?.message?.content;
  const frames = parseSse(r.text).filter((f) => (mode === "detail" ? f.event === "answer" : true) && f.data !== "[DONE]");
  return frames.map((f) => (parseJson(f.data) as { choices?: Array<{ delta?: { content?: string } }> })?.choices?.[0]?.delta?.content ?? "").join("");
}

/** A complete, clean answer: 200, the whole text, a stream ending as docs/api.md#streams says. */
function completeProblem(mode: Mode, r: Reply): string | undefined {
  if (r.status !== 200) return `expected 200, got ${excerpt(r)}`;
  if (mode !== "json") {
    const frames = parseSse(r.text);
    const done = frames.findIndex((f) => f.data === "[DONE]");
    if (done < 0) return `a stream without [DONE] and without an error event: ${excerpt(r)}`;
    const rest = frames.slice(done + 1).map((f) => f.event ?? "data");
    if (rest.join() !== (mode === "detail" ? "flowResponses" : "")) return `after [DONE] came ${rest.join() || "nothing"}`;
  }
  const text = answerText(mode, r);
  return text === BAD_TEXT ? undefined : `a clean end with a different answer: ${JSON.stringify(text)} (silent truncation?)`;
}

interface Expected {
  status: number;
  code?: string;
  type?: string;
  retryAfter?: string;
}

/** The answer to a failed upstream call: the expected status and error, or a begun stream ending in error. */
function failureProblem(mode: Mode, r: Reply, expected: Expected, midStream: boolean): string | undefined {
  if (r.status === 200 && mode !== "json" && midStream) return streamErrorProblem(mode, r);
  const want = `${expected.status}${expected.code ? ` ${expected.code}` : ""}`;
  if (r.status !== expected.status) return `expected ${want}, got ${excerpt(r)}`;
  if (!r.contentType.startsWith("application/json")) return `error answer with content-type "${r.contentType}"`;
  const error = (parseJson(r.text) as { error?: Record<string, unknown> })?.error;
  const shape = errorObjectProblem(error, true);
  if (shape) return `${shape}: ${excerpt(r)}`;
  if (expected.code && error!.code !== expected.code) return `expected ${want}, got ${excerpt(r)}`;
  if (expected.type && error!.type !== expected.type) return `expected type ${expected.type}, got ${excerpt(r)}`;
  if (expected.retryAfter && r.retryAfter !== expected.retryAfter) return `expected Retry-After ${expected.retryAfter}, got ${r.retryAfter}`;
  return undefined;
}

function leakProblem(r: Reply, upstreamMessageAllowed: boolean): string | undefined {
  for (const secret of [CHANNEL_KEY, LEAKY_KEY, upstream.url, ...(upstreamMessageAllowed ? [] : [BAD_SECRET])]) {
    if (r.text.includes(secret)) return `the answer shows "${secret}"`;
  }
  return undefined;
}

const alive = () => gw.proc.exitCode === null && gw.proc.signalCode === null;
/** `withOutput`: and the end of its stderr (once per case is enough) */
const exitProblem = (withOutput = false) =>
  `the gateway process exited (${gw.proc.exitCode ?? gw.proc.signalCode})${withOutput ? `; its stderr ends:\n${gw.stderr().slice(-1500)}` : ""}`;

/** Why the gateway cannot answer at all (it exited, or not even GET /healthz is answered within a second); undefined when it can. */
async function downProblem(): Promise<string | undefined> {
  if (!alive()) return exitProblem();
  const health = await fetch(`${gw.url}/healthz`, { signal: AbortSignal.timeout(1000) }).then((res) => res.status, (err: Error) => err.name);
  if (!alive()) return exitProblem();
  return health === 200 ? undefined : `GET /healthz gets ${health === "TimeoutError" ? "no answer within 1 s: the gateway process is stuck" : health}`;
}

/** After a case left the gateway dead or unable to answer: a fresh one, so later cases judge their own. */
async function replaceGateway(): Promise<void> {
  if (alive()) {
    gw.proc.kill("SIGKILL");
    await gw.exited;
  }
  await startGateway();
}

/** A normal request on the mode's channel must still be answered in full. */
async function normalProblem(mode: Mode): Promise<string | undefined> {
  const r = await ask(mode, "play ok", MODEL[mode], NORMAL_TIMEOUT_MS);
  const problem = typeof r === "string" ? r : completeProblem(mode, r);
  if (!problem) return undefined;
  const down = await downProblem();
  return `a normal ${mode} request afterwards: ${problem}${down ? ` (and ${down})` : ""}`;
}

/** The gateway must have closed its upstream connection (it gave up); waits up to 3 s for that. */
async function gaveUpProblem(scenario: string, model: string, maxBytes: number): Promise<string | undefined> {
  const played = upstream.played.filter((p) => p.scenario === scenario && p.model === model);
  if (played.length === 0) return `the upstream never got the ${scenario} request`;
  const last = played.at(-1)!;
  await Promise.race([last.closed, new Promise((resolve) => setTimeout(resolve, 3000))]);
  if (last.ending !== "peer-closed") return `the upstream's ${scenario} answer ended "${last.ending ?? "still open"}", not closed by the gateway`;
  return last.bytes < maxBytes ? undefined : `the gateway took ${last.bytes} bytes before giving up`;
}

// ---------------------------------------------------------------------------------------------
// The misbehaviours.

const UPSTREAM_ERROR: Expected = { status: 502, code: "upstream_error", type: "api_error" };
const TIMEOUT: Expected = { status: 504, code: "upstream_timeout", type: "api_error" };

interface Case {
  play: string;
  /** "complete": a legal answer in an unusual form, which must come through whole */
  expected: Expected | "complete";
  /** the failure shows after the upstream's headers: a client stream may have begun by then */
  midStream: boolean;
  /** a model other than the mode's */
  model?: string;
  /** the gateway must give up and close the upstream connection before it took this many bytes */
  gaveUpBefore?: number;
  clientTimeoutMs?: number;
  /** the upstream's own message may be shown (400 upstream_rejected carries it) */
  showsUpstreamMessage?: boolean;
}

const CASES: Case[] = [
  ...["blank-lines", "crlf", "comments", "no-space", "split-events"].map((play): Case => ({ play, expected: "complete", midStream: false })),
  { play: "sse-error", expected: UPSTREAM_ERROR, midStream: true },
  { play: "sse-error-then-done", expected: UPSTREAM_ERROR, midStream: true },
  { play: "sse-error-first", expected: UPSTREAM_ERROR, midStream: true },
  { play: "bad-usage", expected: UPSTREAM_ERROR, midStream: true },
  { play: "truncated-event", expected: UPSTREAM_ERROR, midStream: true },
  { play: "garbage", expected: UPSTREAM_ERROR, midStream: true },
  { play: "garbage-then-close", expected: UPSTREAM_ERROR, midStream: true },
  { play: "json-truncated", expected: UPSTREAM_ERROR, midStream: false },
  { play: "json-garbage", expected: UPSTREAM_ERROR, midStream: false },
  { play: "json-empty", expected: UPSTREAM_ERROR, midStream: false },
  { play: "json-not-completion", expected: UPSTREAM_ERROR, midStream: false },
  { play: "refused", model: "m-dead", expected: UPSTREAM_ERROR, midStream: false },
  ...[500, 502, 503, 504].map((s): Case => ({ play: `status ${s}`, expected: UPSTREAM_ERROR, midStream: false })),
  ...[401, 403].map((s): Case => ({ play: `status ${s}`, expected: { status: 502, code: "upstream_auth_failed", type: "api_error" }, midStream: false })),
  { play: "status 429", expected: { status: 429, code: "upstream_rate_limited", type: "rate_limit_error", retryAfter: "7" }, midStream: false },
  ...[400, 404, 422].map((s): Case => ({ play: `status ${s}`, expected: { status: 400, code: "upstream_rejected" }, midStream: false, showsUpstreamMessage: true })),
  { play: "hang-before-headers", expected: TIMEOUT, midStream: false, gaveUpBefore: Infinity },
  { play: "hang-after-headers", expected: TIMEOUT, midStream: true, gaveUpBefore: Infinity },
  { play: "huge", expected: { status: 502 }, midStream: true, gaveUpBefore: HUGE_BYTES },
  { play: "huge-word", expected: { status: 502 }, midStream: true, gaveUpBefore: HUGE_BYTES },
  { play: "drip", expected: TIMEOUT, midStream: true, gaveUpBefore: Infinity, clientTimeoutMs: 3 * TIMEOUTS.totalTimeoutMs },
];

function describeCase(c: Case): string {
  const e = c.expected;
  if (e === "complete") return "the whole answer";
  return `${e.status}${e.code ? ` ${e.code}` : ""}${e.retryAfter ? ` with Retry-After ${e.retryAfter}` : ""}${c.midStream ? ", or a begun stream ending in an error event" : ""}`;
}

async function runCase(c: Case): Promise<string[]> {
  const problems: string[] = [];
  let broken = false;
  await Promise.all(
    MODES.map(async (mode) => {
      const model = c.model ?? MODEL[mode];
      const r = await ask(mode, `play ${c.play}`, model, c.clientTimeoutMs);
      const down = typeof r === "string" ? await downProblem() : undefined;
      if (down) {
        problems.push(`${mode}: ${r}; ${down}`);
        broken = true;
        return;
      }
      const judged = typeof r === "string" ? r : c.expected === "complete" ? completeProblem(mode, r) : failureProblem(mode, r, c.expected, c.midStream);
      const problem = judged ?? (typeof r === "string" ? undefined : leakProblem(r, c.showsUpstreamMessage === true));
      if (problem) problems.push(`${mode}: ${problem}`);
      if (c.gaveUpBefore !== undefined) {
        const gaveUp = await gaveUpProblem(c.play, model, c.gaveUpBefore);
        if (gaveUp) problems.push(`${mode}: ${gaveUp}`);
      }
      const normal = await normalProblem(mode);
      if (normal) problems.push(`${mode}: ${normal}`);
      broken ||= normal !== undefined;
    }),
  );
  if (!alive()) problems.push(exitProblem(true));
  if (broken || !alive()) await replaceGateway();
  return problems;
}

/** Cuts the normal answer after every byte offset, each cut followed by a normal request. */
async function sweep(play: "reset-at" | "fin-at", delimited: boolean): Promise<{ problems: string[]; cuts: number; offsets: number }> {
  const problems: string[] = [];
  let broken = false;
  let cuts = 0;
  let offsets = 0;
  await Promise.all(
    MODES.map(async (mode) => {
      const length = upstream.normalAnswer(mode !== "json", MODEL[mode], delimited).length;
      offsets += length;
      for (let n = 0; n < length && alive(); n++) {
        cuts++;
        const r = await ask(mode, `play ${play} ${n}`);
        const down = typeof r === "string" ? await downProblem() : undefined;
        if (down) {
          problems.push(`${mode}, cut after ${n} of ${length} bytes: ${r}; ${down}; the ${mode} sweep stops here`);
          broken = true;
          break;
        }
        const problem = typeof r === "string" ? r : r.status === 200 ? (isErrorFrame(mode, parseSse(r.text).at(-1)) ? streamErrorProblem(mode, r) : completeProblem(mode, r)) : failureProblem(mode, r, UPSTREAM_ERROR, false);
        if (problem) problems.push(`${mode}, cut after ${n} of ${length} bytes: ${problem}`);
        const normal = await normalProblem(mode);
        if (normal) {
          problems.push(`${mode}, after the cut at ${n}: ${normal}; the ${mode} sweep stops here`);
          broken = true;
          break;
        }
      }
    }),
  );
  if (!alive()) problems.push(exitProblem(true));
  if (broken || !alive()) await replaceGateway();
  return { problems, cuts, offsets };
}

function report(problems: string[]): string {
  return `${problems.length} problems:\n  ${problems.slice(0, 30).join("\n  ")}${problems.length > 30 ? `\n  … and ${problems.length - 30} more` : ""}`;
}

describe("a misbehaving upstream, plain, streamed and in detail mode", () => {
  for (const c of CASES) {
    it(`${c.play}: ${describeCase(c)}; the gateway lives on`, async () => {
      const problems = await runCase(c);
      expect(problems.length, report(problems)).toBe(0);
    }, 30_000);
  }

  it("a reset after every byte offset of a normal answer: a complete answer or an error, never a truncated clean end", async () => {
    const { problems, cuts, offsets } = await sweep("reset-at", false);
    expect(problems.length, report(problems)).toBe(0);
    expect(cuts).toBe(offsets);
  }, 60_000);

  it("a close after every byte offset of a normal answer sent without a length: a complete answer or an error", async () => {
    const { problems, cuts, offsets } = await sweep("fin-at", true);
    expect(problems.length, report(problems)).toBe(0);
    expect(cuts).toBe(offsets);
  }, 60_000);

  it("the gateway process is still running", () => {
    expect(alive(), alive() ? "" : exitProblem(true)).toBe(true);
  });
});
