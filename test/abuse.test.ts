// The anonymous attacker, end to end (issue 20): against one running gateway (the built entry, a
// process of its own), a share-link user with no key asks for 60 choices, sends huge turns, probes
// another user's chat, makes the model fail on purpose to trip the channel for everyone, and a
// model server answers Retry-After: 999999; the demo channel is asked for a 90 MB embeddings
// answer. Then (issue 27) bodies, names and counts that stalled the gateway before any refusal: 2 MB
// of wrong items with no key, a global key's million rerank documents, a 40,000-character model name
// against an alias glob, an 8 MiB count_tokens, 2 MB prompts over the context of the dialects.
// Throughout, a poller (a process of its own too) asks /healthz every 20 ms: it must answer
// within 50 ms every time (this file runs alone, after the others: vitest.config.ts).
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAudioUpstream, type AudioUpstream } from "./support/audio-upstream.js";
import { BUILT_ENTRY, createMainProcesses, type MainProcess } from "./support/main-process.js";
import { startScriptedUpstream, textChunks, type ScriptedUpstream } from "./support/scripted-upstream.js";
import { makeWav } from "./support/tone.js";

const KEY = "sk-abuse-app-key-0001";
const ADMIN = "sk-abuse-admin-key-01";
const GLOBAL = "sk-abuse-global-key-1";
/** the context of "big", Claude Code's sort of model */
const BIG_CONTEXT = 131_072;
const processes = createMainProcesses();
const dir = mkdtempSync(join(tmpdir(), "sluice-abuse-"));
let upstream: ScriptedUpstream;
let gw: MainProcess;
let poller: ChildProcess;
let polled = "";

/** Asks `url` every 20 ms until SIGTERM (printing "polling" once it does), then prints how many
 *  answers came and the slowest, in ms. */
const POLLER = `
let count = 0, max = 0, stop = false;
process.on("SIGTERM", () => { stop = true; });
(async () => {
  // the poller's own first requests load and compile its HTTP client: not the gateway's time
  for (let i = 0; i < 3; i++) await fetch(process.argv[1]).then((r) => r.arrayBuffer());
  process.stdout.write("polling\\n");
  while (!stop) {
    const t = performance.now();
    await fetch(process.argv[1]).then((r) => r.arrayBuffer());
    const took = performance.now() - t;
    count++; if (took > max) max = took;
    await new Promise((r) => setTimeout(r, 20));
  }
  process.stdout.write(JSON.stringify({ count, max }));
})();`;

beforeAll(async () => {
  upstream = await startScriptedUpstream(({ body }) => {
    const said = JSON.stringify(body.messages);
    if (body.model === "m2") return { chunks: [], finishReason: "stop", status: 429, headers: { "retry-after": "999999" } };
    // the model fails on this content, whoever sends it
    if (said.includes("BOOM")) return { chunks: [], finishReason: "stop", status: 500 };
    return { chunks: textChunks("fine", 1), finishReason: "stop", usage: { prompt_tokens: 10, completion_tokens: 1 } };
  });
  const config = {
    // the dialects' body limit of the Claude Code recipe; chat keeps its own
    server: { maxTurnBytes: 256 * 1024, bodyLimitBytes: 2 * 1024 * 1024, dialectBodyLimitBytes: 8 * 1024 * 1024, log: { level: "warn" } },
    store: { driver: "sqlite", path: join(dir, "abuse.db") },
    channels: [
      { name: "gpu", baseUrl: upstream.url, models: ["m", "big", "rr"], healthCheck: { intervalMs: 0 } },
      { name: "limited", baseUrl: upstream.url, models: ["m2"], healthCheck: { intervalMs: 0 } },
      { name: "demo", type: "echo", models: ["echo", "echo-embed"] },
    ],
    llmModels: [
      { model: "m", maxContext: 4000, maxResponse: 1000, charsPointsPrice: 2, maxChoices: 8 },
      { model: "echo", maxContext: 900_000, maxResponse: 1000, charsPointsPrice: 0.01 },
      { model: "m2" },
      { model: "big", maxContext: BIG_CONTEXT, maxResponse: 1000 },
    ],
    reRankModels: [{ model: "rr" }],
    aliases: { "gpt-*-*": "m" },
    vectorModels: [{ model: "echo-embed", maxToken: 8000 }],
    routing: { breaker: { failures: 3, cooldownMs: 60_000 } },
    apps: [
      { id: "a", model: "m", models: ["m", "m2", "echo-embed", "big", "rr"] },
      { id: "chat", model: "echo" },
    ],
    apiKeys: [
      { name: "app", kind: "app", appId: "a", key: KEY },
      { name: "ops", kind: "admin", key: ADMIN },
      { name: "global", kind: "global", key: GLOBAL },
    ],
    shareLinks: [
      { shareId: "pub", appId: "a", maxUsagePoints: 50, apiQpm: 0 },
      { shareId: "echo", appId: "chat", apiQpm: 0 },
    ],
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  gw = await processes.startMain(BUILT_ENTRY, ["--config", join(dir, "config.json")]);
  // a gateway that has served before (its code compiled), as the one the attacker meets would have:
  // a large body too, parsed in pieces
  await postRaw("/v1/messages/count_tokens", JSON.stringify({ model: "big", messages: say("warm up ".repeat(150_000)) }), { "x-api-key": KEY }).then((r) => r.arrayBuffer());
  for (let i = 0; i < 3; i++) {
    await post("/v1/chat/completions", { messages: say("warm up") }, KEY).then((r) => r.arrayBuffer());
    await asUser("echo", "warm", { messages: say("warm up"), chatId: "warm" }).then((r) => r.arrayBuffer());
    await post("/api/share/chat", { shareId: "echo", outLinkUid: "warm", chatId: "warm" }).then((r) => r.arrayBuffer());
    await post("/v1/embeddings", { model: "echo-embed", input: "warm up" }, KEY).then((r) => r.arrayBuffer());
    await postRaw("/v1/messages", JSON.stringify({ model: "big", max_tokens: 5, messages: say("warm up") }), { "x-api-key": KEY }).then((r) => r.arrayBuffer());
    await postRaw("/v1/messages/count_tokens", JSON.stringify({ model: "big", messages: say("warm up") }), { "x-api-key": KEY }).then((r) => r.arrayBuffer());
    await post("/v1/responses", { model: "big", input: "warm up" }, KEY).then((r) => r.arrayBuffer());
    await post("/v1/rerank", { model: "rr", query: "q", documents: [1] }, KEY).then((r) => r.arrayBuffer());
  }
  poller = spawn(process.execPath, ["-e", POLLER, `${gw.url}/healthz`], { stdio: ["ignore", "pipe", "inherit"] });
  poller.stdout!.setEncoding("utf8").on("data", (d: string) => (polled += d));
  // the attack starts once the poller watches (a loaded machine starts a process slowly)
  const exited = once(poller, "exit").then(([code]) => Promise.reject(new Error(`the poller exited (${String(code)})`)));
  while (!polled.includes("polling\n")) await Promise.race([once(poller.stdout!, "data"), exited]);
  exited.catch(() => {}); // its exit at the end is awaited by the last test
});

afterAll(async () => {
  if (poller.exitCode === null) poller.kill("SIGTERM");
  await processes.killAll();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (path: string, body: unknown, key?: string) =>
  fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
const postRaw = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
/** `n` copies of a JSON `item` in a list: a body of many items, made cheaply */
const many = (item: string, n: number) => `[${Array(n).fill(item).join(",")}]`;
/** distinct words: nothing of them is counted before */
const freshWords = (n: number, seed: string) => Array.from({ length: n }, (_, i) => `${seed}${(i * 7919).toString(36)}`).join(" ");
const asUser = (shareId: string, uid: string, body: Record<string, unknown>) => post("/v1/chat/completions", { shareId, outLinkUid: uid, ...body });
const say = (content: string) => [{ role: "user", content }];

describe("the anonymous attacker", () => {
  it("asks for 60 choices on a 50-point link: one is answered, the link never spends past 50 (before: 60 of 50)", async () => {
    const usage = async () => ((await (await fetch(`${gw.url}/api/v1/usage?appId=a`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { totals: { points: number; requests: number } }).totals;
    const before = await usage();
    for (let i = 0; i < 5; i++) await asUser("pub", "spender", { messages: say("count to a lot"), n: 60 });
    for (const r of upstream.requests) expect(r.body.n).toBeUndefined();
    const after = await usage();
    expect(after.requests - before.requests).toBe(5);
    expect(after.points - before.points).toBeLessThanOrEqual(50);
  });

  it("sends huge turns: stored cut, the pull of them bounded, another user's probe refused at once", async () => {
    // built once: the test's own work stays small
    const huge = JSON.stringify({ shareId: "echo", outLinkUid: "hoarder", chatId: "hoard", messages: say(" ".repeat(1024 * 1024) + "x") });
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: huge });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const pulled = await post("/api/share/chat", { shareId: "echo", outLinkUid: "hoarder", chatId: "hoard" });
    expect(pulled.status).toBe(200);
    expect((await pulled.arrayBuffer()).byteLength).toBeLessThan(12 * 256 * 1024 + 10_000);
    const probe = await post("/api/share/chat", { shareId: "echo", outLinkUid: "mallory", chatId: "hoard" });
    expect(probe.status).toBe(403);
    expect((await probe.json()).error.code).toBe("chat_not_owned");
  });

  it("makes the model fail on purpose: one caller's 500s do not open the channel for everyone (before: the next key got 503)", async () => {
    for (let i = 0; i < 5; i++) expect((await asUser("pub", "breaker", { messages: say("BOOM") })).status).toBe(502);
    const res = await post("/v1/chat/completions", { messages: say("normal work") }, KEY);
    expect(res.status).toBe(200);
    const channels = (await (await fetch(`${gw.url}/api/admin/channels`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { channels: Array<{ name: string; breaker: { state: string } }> };
    expect(channels.channels.find((c) => c.name === "gpu")!.breaker.state).toBe("closed");
  });

  it("a second caller meeting 500s too is a failing channel: the breaker opens", async () => {
    // alone, the key's own 500s would not count either; with the share user's, they do
    for (let i = 0; i < 3; i++) {
      await asUser("pub", "breaker", { messages: say("BOOM") });
      await post("/v1/chat/completions", { messages: say("BOOM again") }, KEY);
    }
    const refused = await post("/v1/chat/completions", { messages: say("anything") }, KEY);
    expect(refused.status).toBe(503);
    expect((await refused.json()).error.code).toBe("model_unavailable");
  });

  it("Retry-After: 999999 closes the channel for at most breaker.maxCooldownMs (default 5 min; before: 11.5 days)", async () => {
    for (let i = 0; i < 3; i++) expect((await post("/v1/chat/completions", { model: "m2", messages: say("hi") }, KEY)).status).toBe(429);
    const admin = { authorization: `Bearer ${ADMIN}` };
    const channels = (await (await fetch(`${gw.url}/api/admin/channels`, { headers: admin })).json()) as { channels: Array<{ name: string; breaker: { state: string; retryAt: string | null } }> };
    const limited = channels.channels.find((c) => c.name === "limited")!;
    expect(limited.breaker.state).toBe("open");
    expect(Date.parse(limited.breaker.retryAt!) - Date.now()).toBeLessThanOrEqual(300_000);
  });

  it("asks the demo channel for 256 inputs x 16384 dimensions: refused at once, memory flat (before: a 90 MB answer, RSS +339 MB)", async () => {
    const rss = () => fetch(`${gw.url}/metrics`).then(async (r) => Number(/^process_resident_memory_bytes (\d+)/m.exec(await r.text())?.[1]));
    const before = await rss();
    const res = await post("/v1/embeddings", { model: "echo-embed", input: Array.from({ length: 256 }, (_, i) => `input ${i}`), dimensions: 16384 }, KEY);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe("upstream_rejected");
    expect((await rss()) - before).toBeLessThan(64 * 1024 * 1024);
  });

  describe("bodies, names and counts that stalled the gateway before any refusal (issue 27)", () => {
    it("2 MB of wrong messages with no key: 401 before the body is validated (before: 400 after 3.3-8.5 s of the event loop)", async () => {
      const res = await postRaw("/v1/chat/completions", `{"messages":${many('{"role":"x"}', 150_000)}}`);
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe("missing_api_key");
    });

    it("a key's chat with a million wrong content parts: 400 naming the bound (before: 500, RangeError from Math.max(...spread))", async () => {
      const res = await postRaw("/v1/chat/completions", `{"messages":[{"role":"user","content":${many("1", 1_000_000)}}]}`, { authorization: `Bearer ${KEY}` });
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toBe("messages[0].content: must hold at most 1000 items");
    });

    it("a global key's rerank of a million wrong documents: its 403 (before: 400 after 8.6-17.5 s, the 403 never reached)", async () => {
      const body = `{"model":"rr","query":"q","documents":${many("1", 1_000_000)}}`;
      const global = await postRaw("/v1/rerank", body, { authorization: `Bearer ${GLOBAL}` });
      expect(global.status).toBe(403);
      await global.arrayBuffer();
      const app = await postRaw("/v1/rerank", body, { authorization: `Bearer ${KEY}` });
      expect(app.status).toBe(400);
      expect((await app.json()).error.code).toBe("too_many_documents");
    });

    it("a 40,000-character model name against the glob gpt-*-*: 400 (before: 404 after 1.7-7.6 s of backtracking; /v1/models/{id} 1.3 s)", async () => {
      const res = await post("/v1/chat/completions", { model: `gpt-${"-".repeat(40_000)}\n`, messages: say("hi") }, KEY);
      expect(res.status).toBe(400);
      expect((await res.json()).error.param).toBe("model");
      const listed = await fetch(`${gw.url}/v1/models/gpt-${"-".repeat(15_000)}%0A`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(listed.status).toBe(404);
      await listed.arrayBuffer();
    });

    it("count_tokens of an 8 MiB prompt for a 131k model: counted to twice the context (before: 2.17M tokens, 950 ms-42 s of CPU)", async () => {
      const body = JSON.stringify({ model: "big", messages: say(freshWords(940_000, "c")) });
      expect(body.length).toBeGreaterThan(7 * 1024 * 1024);
      const res = await postRaw("/v1/messages/count_tokens", body, { "x-api-key": KEY });
      expect(await res.json()).toEqual({ input_tokens: 2 * BIG_CONTEXT });
    });

    it("2 MB prompts over the context on Messages and Responses: refused at the bound (before: every token counted, 2.2-7.8 s)", async () => {
      const messages = await postRaw("/v1/messages", JSON.stringify({ model: "big", max_tokens: 10, messages: say(freshWords(240_000, "m")) }), { "x-api-key": KEY });
      expect(messages.status).toBe(400);
      expect((await messages.json()).error.message).toBe(`prompt is too long: ${2 * BIG_CONTEXT} tokens > ${BIG_CONTEXT - 1} maximum`);
      const responses = await post("/v1/responses", { model: "big", input: freshWords(240_000, "r") }, KEY);
      expect(responses.status).toBe(400);
      expect((await responses.json()).error.code).toBe("context_length_exceeded");
    });
  });

  it("never stalled the gateway: /healthz answered within 50 ms every time (before: 100 ms, one JSON.parse of the 8 MiB count_tokens body)", async () => {
    poller.kill("SIGTERM");
    await once(poller, "close");
    const { count, max } = JSON.parse(polled.slice(polled.indexOf("\n") + 1)) as { count: number; max: number };
    expect(count).toBeGreaterThan(10);
    expect(max, `the slowest /healthz took ${max.toFixed(1)} ms`).toBeLessThan(50);
  });
});

// issue 27 item 10: a crafted audio file, on a gateway of its own (an audio model, a spool) with a
// poller of its own
describe("the crafted audio file", () => {
  const KEY_AUDIO = "sk-abuse-audio-key-01";
  let audioUpstream: AudioUpstream;
  let audioGw: MainProcess;
  let audioPoller: ChildProcess;
  let audioPolled = "";

  const transcribe = (file: Buffer, name: string) => {
    const form = new FormData();
    form.set("model", "whisper");
    form.set("file", new Blob([new Uint8Array(file)]), name);
    return fetch(`${audioGw.url}/v1/audio/transcriptions`, { method: "POST", body: form, headers: { authorization: `Bearer ${KEY_AUDIO}` } });
  };

  beforeAll(async () => {
    audioUpstream = await startAudioUpstream();
    const config = {
      server: { log: { level: "warn" }, audioSpoolDir: dir },
      channels: [{ name: "audio", baseUrl: audioUpstream.url, models: ["whisper", "m"], healthCheck: { intervalMs: 0 } }],
      llmModels: [{ model: "m" }],
      sttModels: [{ model: "whisper", charsPointsPrice: 1 }],
      apps: [{ id: "a", model: "m", models: ["m", "whisper"] }],
      apiKeys: [{ name: "audio", kind: "app", appId: "a", key: KEY_AUDIO }],
    };
    writeFileSync(join(dir, "audio.json"), JSON.stringify(config));
    audioGw = await processes.startMain(BUILT_ENTRY, ["--config", join(dir, "audio.json")]);
    // a gateway that has served before: its parser started, its code compiled
    for (let i = 0; i < 3; i++) expect((await transcribe(makeWav({ seconds: 1 }), "warm.wav")).status).toBe(200);
    audioPoller = spawn(process.execPath, ["-e", POLLER, `${audioGw.url}/healthz`], { stdio: ["ignore", "pipe", "inherit"] });
    audioPoller.stdout!.setEncoding("utf8").on("data", (d: string) => (audioPolled += d));
    const exited = once(audioPoller, "exit").then(([code]) => Promise.reject(new Error(`the poller exited (${String(code)})`)));
    while (!audioPolled.includes("polling\n")) await Promise.race([once(audioPoller.stdout!, "data"), exited]);
    exited.catch(() => {});
  });

  afterAll(async () => {
    if (audioPoller?.exitCode === null) audioPoller.kill("SIGTERM");
    await audioUpstream?.close();
  });

  it("sends 256 KiB of 0xFF as an MP3, four at once: each refused 400 invalid_audio, parsed off the event loop (before: on it, /healthz held up to 118 ms)", async () => {
    // behind an ID3 tag, so that the first look at the file lets them by to the parser (test/audio-refusal.test.ts)
    const crafted = Buffer.concat([Buffer.from("ID3\x03\0\0\0\0\0\0", "latin1"), Buffer.alloc(256 * 1024 - 16, 0xff)]);
    const answers = await Promise.all([1, 2, 3, 4].map(() => transcribe(crafted, "crafted.mp3")));
    for (const res of answers) {
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ code: "invalid_audio", param: "file" });
    }
    // a real file after them is read as ever
    expect((await transcribe(makeWav({ seconds: 1 }), "after.wav")).status).toBe(200);
  });

  it("never stalled the gateway: /healthz answered within 50 ms every time", async () => {
    audioPoller.kill("SIGTERM");
    await once(audioPoller, "close");
    const { count, max } = JSON.parse(audioPolled.slice(audioPolled.indexOf("\n") + 1)) as { count: number; max: number };
    expect(count).toBeGreaterThan(10);
    expect(max).toBeLessThan(50);
  });
});
