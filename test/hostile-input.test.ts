// Hostile input (issue "Hardening", item 6): over 2,000 seeded hostile chat requests, sent over real
// sockets to two gateways (a small body limit, and a roomy one for giant arrays). A body gets 2xx only
// when it is valid; anything else gets a 4xx OpenAI error body — never a 5xx, client garbage is the
// client's mistake; a stream ends with [DONE] or an error event; and the gateway goes on answering
// normal requests (checked every 100 bodies). Replay a run with HOSTILE_SEED=<seed>.
import { Readable } from "node:stream";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APP_KEY, GLOBAL_KEY, HASHED_KEY, coreConfig } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { generateHostileCases, type Category, type HostileCase } from "./support/hostile-bodies.js";
import { parseSse, type SseFrame } from "./support/sse.js";
import { UPSTREAM_DEFAULTS, startUpstream, type Upstream } from "./support/upstream.js";

const SEED = Number(process.env.HOSTILE_SEED ?? 0x5eed);
const SMALL_LIMIT = 64 * 1024;
const ROOMY_LIMIT = 8 * 1024 * 1024;
const CONCURRENCY = 16;
const PROBE_EVERY = 100;
const REQUEST_TIMEOUT_MS = 10_000;
const CATEGORIES: Category[] = ["valid", "malformed-json", "mutated", "wrong-types", "huge-strings", "deep-nesting", "proto-keys", "invalid-utf8", "giant-arrays", "odd-headers"];

const cases = generateHostileCases({ seed: SEED, bodyLimitBytes: SMALL_LIMIT, keys: { app: APP_KEY, global: GLOBAL_KEY, hashed: HASHED_KEY } });
const prototypeNames = { object: Object.getOwnPropertyNames(Object.prototype).sort(), array: Object.getOwnPropertyNames(Array.prototype).sort() };

let upstream: Upstream;
const gateways = {} as Record<HostileCase["target"], StartedGateway>;
const agent = new Agent({ connections: CONCURRENCY * 2, pipelining: 1 });

beforeAll(async () => {
  upstream = await startUpstream({ record: false });
  const config = (bodyLimitBytes: number) => coreConfig(upstream.url, { server: { bodyLimitBytes } });
  gateways.small = await startGateway(config(SMALL_LIMIT));
  gateways.roomy = await startGateway(config(ROOMY_LIMIT));
});
afterAll(async () => {
  await Promise.all([gateways.small?.close(), gateways.roomy?.close()]);
  await upstream?.close();
  await agent.close();
});

interface Answer {
  status: number;
  contentType: string;
  text: string;
  ms: number;
}

async function send(c: Pick<HostileCase, "target" | "path" | "headers" | "body" | "chunked">, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Answer> {
  const started = performance.now();
  const res = await request(gateways[c.target].url + c.path, {
    method: "POST",
    headers: c.headers,
    body: c.chunked ? Readable.from([c.body]) : c.body,
    dispatcher: agent,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.body.text();
  return { status: res.statusCode, contentType: String(res.headers["content-type"] ?? ""), text, ms: performance.now() - started };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isErrorFrame = (f: SseFrame) => f.event === "error" || (parseJson(f.data) as { error?: unknown } | undefined)?.error !== undefined;

/** What is wrong with the answer to `c`, or undefined. */
function judge(c: HostileCase, a: Answer): string | undefined {
  const s = a.status;
  const success = s >= 200 && s < 300;
  const clientError = s >= 400 && s < 500;
  if (s >= 500) return `answered ${s} to client input`;
  if (c.expect.kind === "ok" && !success) return `expected 2xx for a valid body, got ${s}`;
  if (c.expect.kind === "refused" && !clientError) return `expected 4xx, got ${s}`;
  if (c.expect.kind === "refused" && c.expect.status && s !== c.expect.status) return `expected ${c.expect.status}, got ${s}`;
  if (c.expect.kind === "either" && !success && !clientError) return `expected 2xx or 4xx, got ${s}`;
  if (c.budgetMs && a.ms > c.budgetMs) return `answered ${s} after ${Math.round(a.ms)} ms (budget ${c.budgetMs} ms)`;
  return success ? judgeSuccess(a, c.expect.kind === "ok") : judgeErrorBody(a);
}

function judgeSuccess(a: Answer, valid: boolean): string | undefined {
  if (a.contentType.startsWith("text/event-stream")) {
    const frames = parseSse(a.text);
    const last = frames.at(-1);
    if (!last) return "an empty stream";
    if (isErrorFrame(last)) return valid ? "the stream of a valid body ended with an error event" : undefined;
    const done = frames.findIndex((f) => f.data === "[DONE]");
    if (done < 0) return `the stream ended without [DONE] or an error event (last: ${last.data.slice(0, 80)})`;
    if (frames.slice(done + 1).some((f) => f.event !== "flowResponses")) return "events other than flowResponses after [DONE]";
    return undefined;
  }
  const body = parseJson(a.text) as { choices?: unknown } | undefined;
  return Array.isArray(body?.choices) ? undefined : `2xx without a chat.completion body (${a.contentType})`;
}

function judgeErrorBody(a: Answer): string | undefined {
  if (!a.contentType.startsWith("application/json")) return `error answer with content-type "${a.contentType}"`;
  const error = (parseJson(a.text) as { error?: Record<string, unknown> } | undefined)?.error;
  if (!error || typeof error !== "object") return "error answer without an error object";
  const keys = Object.keys(error).sort().join();
  if (keys !== "code,message,param,type") return `error keys are ${keys}`;
  if (typeof error.message !== "string" || error.message.trim() === "") return "error.message is not a non-empty string";
  if (typeof error.code !== "string" || error.code === "") return "error.code is not a non-empty string";
  if (typeof error.type !== "string" || error.type === "") return "error.type is not a non-empty string";
  if (error.param !== null && typeof error.param !== "string") return "error.param is neither null nor a string";
  return undefined;
}

/** A normal request must still be answered in full. */
async function probe(target: HostileCase["target"]): Promise<string | undefined> {
  try {
    const a = await send({ target, path: "/v1/chat/completions", headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` }, body: Buffer.from('{"messages":[{"role":"user","content":"probe"}]}'), chunked: false });
    const content = (parseJson(a.text) as { choices?: Array<{ message?: { content?: string } }> } | undefined)?.choices?.[0]?.message?.content;
    return a.status === 200 && content === UPSTREAM_DEFAULTS.text ? undefined : `the ${target} gateway answered a normal request ${a.status} ${a.text.slice(0, 200)}`;
  } catch (err) {
    return `the ${target} gateway did not answer a normal request: ${(err as Error).message}`;
  }
}

async function inParallel<T>(items: T[], width: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await run(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

/** Sends every case (those with a time budget one at a time), probing every PROBE_EVERY bodies. */
async function runCases(list: HostileCase[]): Promise<string[]> {
  const problems: Array<[order: number, text: string]> = [];
  const one = async (c: HostileCase) => {
    let problem: string | undefined;
    let answer: Answer | undefined;
    try {
      answer = await send(c, c.target === "roomy" ? 2 * REQUEST_TIMEOUT_MS : REQUEST_TIMEOUT_MS);
      problem = judge(c, answer);
    } catch (err) {
      problem = `no answer: ${(err as Error).name} ${(err as { code?: string }).code ?? ""} ${(err as Error).message}`;
    }
    if (problem) problems.push([c.id, `#${c.id} ${c.label} (${c.body.length} bytes): ${problem}${answer ? ` — ${answer.status} ${answer.text.slice(0, 160)}` : ""}`]);
  };
  const ordered = [...list.filter((c) => c.budgetMs), ...list.filter((c) => !c.budgetMs)];
  for (let i = 0; i < ordered.length; i += PROBE_EVERY) {
    const batch = ordered.slice(i, i + PROBE_EVERY);
    const timed = batch.filter((c) => c.budgetMs);
    for (const c of timed) await one(c);
    await inParallel(batch.filter((c) => !c.budgetMs), CONCURRENCY, one);
    for (const target of new Set(batch.map((c) => c.target))) {
      const problem = await probe(target);
      if (problem) problems.push([Infinity, `after ${i + batch.length} bodies: ${problem}`]);
    }
  }
  return problems.sort((a, b) => a[0] - b[0]).map(([, text]) => text);
}

function report(category: string, total: number, problems: string[]): string {
  const shown = problems.slice(0, 40).join("\n  ");
  return `${problems.length} of ${total} ${category} bodies answered wrongly (seed ${SEED}):\n  ${shown}${problems.length > 40 ? `\n  … and ${problems.length - 40} more` : ""}`;
}

describe(`hostile input (seed ${SEED}, ${cases.length} bodies)`, () => {
  it("sends at least 2,000 bodies, of every category, some of them valid", () => {
    expect(cases.length).toBeGreaterThanOrEqual(2000);
    for (const category of CATEGORIES) expect(cases.some((c) => c.category === category), category).toBe(true);
    expect(cases.filter((c) => c.expect.kind === "ok").length).toBeGreaterThanOrEqual(300);
  });

  for (const category of CATEGORIES) {
    const list = cases.filter((c) => c.category === category);
    it(`${category}: ${list.length} bodies, each answered as the contract says`, async () => {
      const problems = await runCases(list);
      expect(problems.length, report(category, list.length, problems)).toBe(0);
    }, 45_000);
  }

  it("polluted no prototype", () => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames.object);
    expect(Object.getOwnPropertyNames(Array.prototype).sort()).toEqual(prototypeNames.array);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("still answers normal requests, plain and streamed, after all of them", async () => {
    for (const target of ["small", "roomy"] as const) expect(await probe(target)).toBeUndefined();
    const streamed = await send({ target: "small", path: "/v1/chat/completions", headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` }, body: Buffer.from('{"stream":true,"messages":[{"role":"user","content":"hi"}]}'), chunked: false });
    expect(streamed.status).toBe(200);
    expect(parseSse(streamed.text).at(-1)?.data).toBe("[DONE]");
  });
});
