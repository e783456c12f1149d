// FastGPT variables (docs/api.md#variables): `{{key}}` filled in the model's and the app's system prompts,
// `{{cTime}}`, variables kept with a chat and merged, `newVariables` / `updateVariables` in detail
// answers, share links alike; substitution in one pass with bounded output; the store's upgrade.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../src/store/migrations.js";
import { createSqliteStore } from "../src/store/sqlite.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { useGateway } from "./support/harness.js";
import { APP_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";
import { parseSse } from "./support/sse.js";
import { chatOf, history } from "./support/store-rows.js";

const BODY_LIMIT = 256 * 1024;
const config = (url: string) =>
  coreConfig(url, {
    server: { bodyLimitBytes: BODY_LIMIT },
    channels: [{ name: "up", baseUrl: url, key: "channel-key", models: ["m1"] }],
    llmModels: [{ model: "m1", maxContext: 1_000_000, maxResponse: 1000, defaultSystemChatPrompt: "Model to {{name}}." }],
    apps: [{ id: "a1", model: "m1", systemPrompt: "Hi {{name}}; profile {{profile}}; n={{n}}; {{nope}}; now {{cTime}}; {{ name }}" }],
    apiKeys: [{ name: "app-one", kind: "app", appId: "a1", key: APP_KEY }],
    shareLinks: [{ shareId: "open", appId: "a1", responseDetail: true }],
  });
const h = useGateway(config);
beforeEach(() => h.upstream.reset());

/** The system message the upstream was sent last. */
const sentSystem = () => h.upstream.last().body.messages.find((m) => m.role === "system")?.content as string;

/** `YYYY-MM-DD HH:mm:ss` in local time, written here independently of the gateway's code. */
function localTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

describe("substitution", () => {
  it("fills {{key}} in the model's and the app's prompts: strings as they are, others as JSON, cTime as local time, unknown keys as written", async () => {
    const before = Date.now();
    const res = await chat(h.gw.url, { messages: [userMessage("x")], variables: { name: "Ada", profile: { age: 36, langs: ["en"] }, n: 7 } });
    const after = Date.now();
    expect(res.status).toBe(200);
    const system = sentSystem();
    const time = /now (\S+ \S+);/.exec(system)?.[1];
    expect([localTime(before), localTime(after)]).toContain(time);
    expect(system).toBe(`Model to Ada.\n\nHi Ada; profile {"age":36,"langs":["en"]}; n=7; {{nope}}; now ${time}; {{ name }}`);
  });

  it("leaves placeholders as written without variables, and never touches the client's own system message", async () => {
    await chat(h.gw.url, { messages: [userMessage("x")] });
    expect(sentSystem()).toMatch(/^Model to {{name}}\.\n\nHi {{name}}; profile {{profile}}; n={{n}}; {{nope}}; now \d{4}-\d\d-\d\d \d\d:\d\d:\d\d; /);
    await chat(h.gw.url, { messages: [{ role: "system", content: "Mine {{name}}" }, userMessage("x")], variables: { name: "Ada" } });
    expect(sentSystem()).toBe("Mine {{name}}");
  });

  it("reads a value once: {{a}} whose value holds {{b}} stays {{b}}", async () => {
    await chat(h.gw.url, { messages: [userMessage("x")], variables: { name: "{{profile}}", profile: "{{name}}", n: "{{cTime}}" } });
    expect(sentSystem()).toMatch(/^Model to {{profile}}\.\n\nHi {{profile}}; profile {{name}}; n={{cTime}}; /);
  });

  it("keeps cTime the current time even when a client sends one (a system variable)", async () => {
    await chat(h.gw.url, { messages: [userMessage("x")], variables: { cTime: "yesterday" } });
    expect(sentSystem()).toMatch(/now \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2};/);
  });
});

describe("variables kept with a chat", () => {
  it("stores them, merges later requests' over them, and returns them as newVariables", async () => {
    const first = await chat(h.gw.url, { chatId: "v-1", messages: [userMessage("one")], variables: { name: "Ada", n: 1 }, detail: true });
    expect((await first.json()).newVariables).toEqual({ name: "Ada", n: 1 });

    const second = await chat(h.gw.url, { chatId: "v-1", messages: [userMessage("two")], variables: { n: 2 }, detail: true });
    expect((await second.json()).newVariables).toEqual({ name: "Ada", n: 2 });
    expect(sentSystem()).toContain("Hi Ada; profile {{profile}}; n=2;");

    // a request without variables uses the stored ones and changes nothing
    await chat(h.gw.url, { chatId: "v-1", messages: [userMessage("three")] });
    expect(sentSystem()).toContain("Hi Ada; profile {{profile}}; n=2;");
    expect((await chatOf(h.gw.store, "a1", "v-1"))?.variables).toEqual({ name: "Ada", n: 2 });
  });

  it("sends updateVariables with the merged variables before flowResponses on a detail stream", async () => {
    await chat(h.gw.url, { chatId: "v-2", messages: [userMessage("one")], variables: { name: "Ada" } });
    const res = await chat(h.gw.url, { chatId: "v-2", stream: true, detail: true, messages: [userMessage("two")], variables: { n: 3 } });
    const frames = parseSse(await res.text());
    const events = frames.map((f) => f.event);
    expect(events.slice(-3)).toEqual(["updateVariables", "answer", "flowResponses"]);
    expect(frames.at(-2)!.data).toBe("[DONE]");
    expect(JSON.parse(frames.at(-3)!.data)).toEqual({ name: "Ada", n: 3 });
  });

  it("answers newVariables {} in detail mode when there are none", async () => {
    const body = await (await chat(h.gw.url, { messages: [userMessage("x")], detail: true })).json();
    expect(body.newVariables).toEqual({});
  });

  it("works the same through a share link", async () => {
    const share = { shareId: "open", outLinkUid: "local-v", chatId: "sv-1", detail: true };
    const first = await chat(h.gw.url, { ...share, messages: [userMessage("one")], variables: { name: "Bo" } }, null);
    expect(first.status).toBe(200);
    expect((await first.json()).newVariables).toEqual({ name: "Bo" });
    const second = await (await chat(h.gw.url, { ...share, messages: [userMessage("two")], variables: { n: 5 } }, null)).json();
    expect(second.newVariables).toEqual({ name: "Bo", n: 5 });
    expect(sentSystem()).toContain("Hi Bo; profile {{profile}}; n=5;");
  });
});

describe("hostile variables", () => {
  it("refuses a value that would blow the prompt past the body limit, however often it is named", async () => {
    // the model's prompt names it once and the app's once: two copies of a value near the limit
    const big = "v".repeat(BODY_LIMIT * 0.6);
    const res = await chat(h.gw.url, { messages: [userMessage("x")], variables: { name: big } });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "variables_too_large", param: "variables" });
    expect(h.upstream.requests).toHaveLength(0);
  });

  it("answers 10,000 variables, and a value full of placeholders, without filling any of them in again", async () => {
    const many: Record<string, string> = {};
    for (let i = 0; i < 10_000; i++) many[`k${i}`] = `{{k${i + 1}}}`;
    many.name = "{{k0}}".repeat(1_000);
    const res = await chat(h.gw.url, { messages: [userMessage("x")], variables: many });
    expect(res.status).toBe(200);
    expect(sentSystem().startsWith(`Model to ${"{{k0}}".repeat(1_000)}.`)).toBe(true);
  });

  it("refuses a merge that would store more than the body limit in one chat", async () => {
    const half = "w".repeat(BODY_LIMIT * 0.4);
    // the prompts do not name these, so only the stored sum grows
    expect((await chat(h.gw.url, { chatId: "v-big", messages: [userMessage("one")], variables: { a: half } })).status).toBe(200);
    expect((await chat(h.gw.url, { chatId: "v-big", messages: [userMessage("two")], variables: { b: half } })).status).toBe(200);
    const third = await chat(h.gw.url, { chatId: "v-big", messages: [userMessage("three")], variables: { c: half } });
    expect(third.status).toBe(400);
    expect((await third.json()).error).toMatchObject({ code: "variables_too_large", param: "variables" });
    // replacing a stored value instead of adding one still works
    expect((await chat(h.gw.url, { chatId: "v-big", messages: [userMessage("four")], variables: { a: "small" } })).status).toBe(200);
  });
});

describe("store", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sluice-vars-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps variables across a reopen, read through the cache and from disk", async () => {
    const path = join(dir, "vars.db");
    const store = createSqliteStore(path);
    const round = { appId: "a1", chatId: "c1", owner: { keyName: "k1" }, user: "q", assistant: "a", at: 1 };
    await store.appendRound({ ...round, variables: { name: "Ada" } });
    expect((await chatOf(store, "a1", "c1"))?.variables).toEqual({ name: "Ada" });
    await store.appendRound({ ...round, at: 2 }); // no variables: the stored ones stay
    await store.appendRound({ ...round, at: 3, variables: { name: "Ada", n: 2 } });
    expect((await chatOf(store, "a1", "c1"))?.variables).toEqual({ name: "Ada", n: 2 });
    await store.close();
    const reopened = createSqliteStore(path);
    expect(await chatOf(reopened, "a1", "c1")).toEqual({ chatId: "c1", owner: { keyName: "k1" }, title: "q", updatedAt: 3, variables: { name: "Ada", n: 2 } });
    await reopened.close();
  });

  it("upgrades a database made before the variables column, keeping its chats", async () => {
    const path = join(dir, "old.db");
    const before = MIGRATIONS.findIndex((m) => m.includes("ADD COLUMN variables"));
    expect(before).toBeGreaterThan(0);
    const old = new Database(path);
    for (const step of MIGRATIONS.slice(0, before)) old.exec(step);
    old.pragma(`user_version = ${before}`);
    old.prepare("INSERT INTO chats (app_id, chat_id, share_id, uid, title, created_at, updated_at) VALUES ('a1', 'old', 'open', 'u1', 'kept', 5, 5)").run();
    old.prepare("INSERT INTO rounds (app_id, chat_id, user, assistant, created_at) VALUES ('a1', 'old', 'q1', 'a1', 5)").run();
    old.close();

    const upgraded = createSqliteStore(path);
    try {
      expect(await chatOf(upgraded, "a1", "old")).toEqual({ chatId: "old", owner: { shareId: "open", uid: "u1" }, title: "kept", updatedAt: 5 });
      expect((await history(upgraded, "a1", "old", 10)).map((m) => m.content)).toEqual(["q1", "a1"]);
      await upgraded.appendRound({ appId: "a1", chatId: "old", owner: { shareId: "open", uid: "u1" }, user: "q2", assistant: "a2", at: 6, variables: { x: true } });
      expect((await chatOf(upgraded, "a1", "old"))?.variables).toEqual({ x: true });
    } finally {
      await upgraded.close();
    }
  });
});

describe("a gateway restart", () => {
  let gw: StartedGateway | undefined;
  afterAll(() => gw?.close());

  it("finds a chat's variables again in a store opened anew", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sluice-vars-gw-"));
    const path = join(dir, "gw.db");
    try {
      const store = createSqliteStore(path);
      gw = await startGateway(config(h.upstream.url), { store });
      expect((await chat(gw.url, { chatId: "r-1", messages: [userMessage("one")], variables: { name: "Cy" } })).status).toBe(200);
      await gw.close();
      await store.close();
      const again = createSqliteStore(path);
      gw = await startGateway(config(h.upstream.url), { store: again });
      await chat(gw.url, { chatId: "r-1", messages: [userMessage("two")] }, APP_KEY);
      expect(sentSystem()).toContain("Hi Cy;");
      await gw.close();
      gw = undefined;
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
