// The log of the built gateway, read as a machine reads it: every stdout line is JSON (pino), request
// lines carry what an operator needs and nothing secret, nothing is lost on SIGTERM right after a
// burst, a fatal config error is still a readable line with exit 1, and --pretty gives human lines.
import { writeFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startBadUpstream, LEAKY_KEY, type BadUpstream } from "./support/bad-upstream.js";
import { useTempDir } from "./support/fixtures.js";
import { BUILT_ENTRY, createMainProcesses, type MainProcess } from "./support/main-process.js";
import { readUntil } from "./support/sse.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const APP_KEY = "sk-logs-app-key-0123456789";
const WRONG_KEY = "sk-logs-wrong-key-0123456789";
const CHANNEL_KEY = "logs-channel-key-0123456789";
/** In every message sent: no log line may hold it. */
const CONTENT = "content-marker-7fa3c1";
const BURST = 500;
const BURST_CONCURRENCY = 25;
const SIGTERM_AFTER = 450;

type Line = Record<string, unknown>;

const processes = createMainProcesses();
const tmp = useTempDir("sluice-logs-");
let upstream: BadUpstream;
/** a slow stream (model "slow"), for a client that leaves mid-answer */
let slow: Upstream;

beforeAll(async () => {
  upstream = await startBadUpstream();
  slow = await startUpstream({ chunks: 200, chunkDelayMs: 50 });
});
afterEach(() => processes.killAll());
afterAll(async () => {
  await upstream?.close();
  await slow?.close();
});

function writeConfig(name: string, server: Record<string, unknown> = {}): string {
  const path = tmp.file(name);
  const channel = { baseUrl: upstream.url, key: CHANNEL_KEY, models: ["m"], healthCheck: { intervalMs: 0 } };
  writeFileSync(path, JSON.stringify({
    server: { log: { level: "info" }, ...server },
    store: { driver: "memory" },
    routing: { maxAttempts: 2 },
    channels: [
      { name: "c1", priority: 1, ...channel },
      { name: "c2", priority: 0, ...channel },
      { ...channel, name: "c-slow", baseUrl: slow.url, models: ["slow"] },
    ],
    llmModels: ["m", "slow"].map((model) => ({ model, maxContext: 4000, maxResponse: 100, inputPrice: 1, outputPrice: 2 })),
    apps: [{ id: "a1", model: "m", models: ["m", "slow"] }],
    apiKeys: [{ name: "k1", kind: "app", appId: "a1", key: APP_KEY }],
  }));
  return path;
}

function ask(url: string, requestId: string, body: unknown, { key = APP_KEY, signal }: { key?: string; signal?: AbortSignal } = {}) {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-request-id": requestId },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
}
const play = (scenario: string, stream = false) => ({ stream, messages: [{ role: "user", content: `play ${scenario} ${CONTENT}` }] });

/** Every stdout line parsed (a line that is not JSON fails the test here). */
function lines(gw: MainProcess): Line[] {
  return gw.stdout().split("\n").filter(Boolean).map((text) => {
    try {
      return JSON.parse(text) as Line;
    } catch {
      throw new Error(`a log line is not JSON: ${text}`);
    }
  });
}
const requestLines = (gw: MainProcess) => lines(gw).filter((l) => l.msg === "request");

describe("the gateway's log", () => {
  it("is JSON line by line over a run with errors, streams and an abort; request lines carry the facts and no secret", async () => {
    const gw = await processes.startMain(BUILT_ENTRY, ["--config", writeConfig("run.json")]);

    // 1. A run with a bad key, a bad body, an upstream 500, a stream, a whole answer and a client abort.
    expect((await ask(gw.url, "r-badkey", play("ok"), { key: WRONG_KEY })).status).toBe(401);
    expect((await ask(gw.url, "r-badbody", '{"messages": "not a list"}')).status).toBe(400);
    const failed = await ask(gw.url, "r-500", play("status 500"));
    expect(failed.status).toBe(502);
    expect(failed.headers.get("x-request-id")).toBe("r-500");
    const streamed = await ask(gw.url, "r-stream", play("ok", true));
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain("[DONE]");
    expect((await ask(gw.url, "r-json", play("ok"))).status).toBe(200);
    const abort = new AbortController();
    const slowly = await ask(gw.url, "r-abort", { ...play("ok", true), model: "slow" }, { signal: abort.signal });
    await readUntil(slowly, (text) => text.includes('"content"'));
    abort.abort();

    // 2. Each request's line, found by the id the client sent (lines are batched: wait for the last).
    await expect.poll(() => requestLines(gw).length, { interval: 50, timeout: 5000 }).toBe(6);
    const byId = new Map(requestLines(gw).map((l) => [l.requestId, l]));
    const base = { msg: "request", route: "/v1/chat/completions", method: "POST" };
    expect(byId.get("r-badkey")).toMatchObject({ ...base, level: "warn", status: 401, errorCode: "invalid_api_key" });
    expect(byId.get("r-badkey")).not.toHaveProperty("keyName");
    expect(byId.get("r-badbody")).toMatchObject({ ...base, level: "warn", status: 400 });
    expect(byId.get("r-badbody")!.errorCode).toEqual(expect.any(String));
    expect(byId.get("r-500")).toMatchObject({
      ...base, level: "error", status: 502, errorCode: "upstream_error", app: "a1", keyName: "k1", model: "m", channel: "c2", attempts: 2, stream: false,
    });
    expect(byId.get("r-500")!.upstreamMessage).toMatch(/upstream says no \(HTTP 500\).*\[redacted\]/);
    expect(byId.get("r-stream")).toMatchObject({
      ...base, level: "info", status: 200, app: "a1", keyName: "k1", model: "m", channel: "c1", attempts: 1, stream: true,
      inputTokens: 7, outputTokens: 9, points: (7 * 1 + 9 * 2) / 1000, finishReason: "stop",
    });
    expect(byId.get("r-stream")!.ttftMs).toEqual(expect.any(Number));
    expect(byId.get("r-json")).toMatchObject({ ...base, status: 200, channel: "c1", attempts: 1, stream: false, inputTokens: 7, outputTokens: 9, finishReason: "stop" });
    expect(byId.get("r-abort")).toMatchObject({ ...base, status: 200, channel: "c-slow", model: "slow", stream: true, finishReason: "client_abort" });
    for (const line of requestLines(gw)) {
      expect(line.durationMs).toEqual(expect.any(Number));
      expect(new Date(String(line.time)).toISOString()).toBe(line.time);
    }

    // 3. Lifecycle lines are JSON too, and nothing secret is anywhere in the output.
    expect(lines(gw).find((l) => String(l.msg).startsWith("listening on"))).toMatchObject({ level: "info", store: "memory" });
    gw.proc.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(lines(gw).at(-1)).toMatchObject({ level: "info", msg: "stopped" });
    const output = gw.stdout() + gw.stderr();
    for (const secret of [APP_KEY, WRONG_KEY, CHANNEL_KEY, LEAKY_KEY, CONTENT]) expect(output).not.toContain(secret);
  });

  it(`loses no request line on SIGTERM in the middle of a burst of ${BURST} requests`, async () => {
    const gw = await processes.startMain(BUILT_ENTRY, ["--config", writeConfig("burst.json")]);
    // every request that got an answer (200, or 503 once draining) must have its line; those the
    // stopped listener refused have none
    const answered = new Set<string>();
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < BURST; i = next++) {
        try {
          await (await ask(gw.url, `burst-${i}`, play("ok"))).arrayBuffer();
          answered.add(`burst-${i}`);
        } catch {
          continue;
        }
        if (answered.size === SIGTERM_AFTER) gw.proc.kill("SIGTERM");
      }
    };
    await Promise.all(Array.from({ length: BURST_CONCURRENCY }, worker));
    expect(await gw.exited).toBe(0);
    const logged = new Set(requestLines(gw).map((l) => l.requestId));
    expect([...answered].filter((id) => !logged.has(id))).toEqual([]);
    expect(logged.size).toBe(answered.size);
    expect(answered.size).toBeGreaterThanOrEqual(SIGTERM_AFTER);
  });

  it("writes a fatal config error as a readable JSON line naming each problem, and exits 1", async () => {
    const path = tmp.file("bad.json");
    writeFileSync(path, JSON.stringify({ llmModels: [{ model: "m", maxContext: "big" }], apikeys: [] }));
    const gw = await processes.spawnMain(BUILT_ENTRY, ["--config", path]);
    expect(await gw.exited).toBe(1);
    const fatal = lines(gw).find((l) => l.level === "fatal");
    expect(fatal?.msg).toBe(`invalid config ${path}`);
    expect(fatal?.problems).toEqual(expect.arrayContaining([expect.stringContaining("llmModels[0].maxContext"), expect.stringContaining('did you mean "apiKeys"')]));
  });

  it("writes human-readable lines with --pretty", async () => {
    const gw = await processes.startMain(BUILT_ENTRY, ["--config", writeConfig("pretty.json"), "--pretty"]);
    expect((await ask(gw.url, "r-pretty", play("ok"))).status).toBe(200);
    await expect.poll(() => gw.stdout(), { interval: 50, timeout: 5000 }).toContain("r-pretty");
    expect(gw.stdout()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: listening on http:/m);
    expect(gw.stdout()).not.toContain('"level"');
    gw.proc.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(gw.stdout()).toMatch(/INFO: stopped/);
  });
});
