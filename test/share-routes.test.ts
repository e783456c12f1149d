// The share-link API driven in-process through an h3 app, over a real in-memory SQLite store and a
// real operator server on 127.0.0.1.
import { H3, type H3Event } from "h3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import type { ShareLinkConfig } from "../src/config/schema.js";
import { errorResponse, toGatewayError } from "../src/http/errors.js";
import { silentObserver } from "../src/observability/observer.js";
import { createShareAuth, type ShareAuth } from "../src/share/callbacks.js";
import { createShareRoutes } from "../src/share/routes.js";
import { createSqliteStore } from "../src/store/sqlite.js";
import type { ChatOwner, Store } from "../src/store/types.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";

const NOW = Date.parse("2025-06-01T12:00:00Z");
const DAY = 24 * 60 * 60 * 1000;

let op: OperatorServer;
let store: Store;
let auth: ShareAuth;
let app: H3;

function shareLink(shareId: string, over: Partial<ShareLinkConfig> = {}): ShareLinkConfig {
  return { shareId, appId: "support", qpm: 0, maxUsagePoints: -1, tpm: 0, periodPoints: -1, period: "day", expiresAt: null, responseDetail: false, callbackTimeoutMs: 2000, apiQpm: 0, ...over };
}

beforeEach(async () => {
  op = await startOperatorServer();
  store = createSqliteStore(":memory:");
  auth = createShareAuth({ observer: silentObserver });
  const links = new Map(
    [
      shareLink("open"),
      shareLink("second"),
      shareLink("verified", { authHost: op.url }),
      shareLink("expired", { expiresAt: "2025-05-01T00:00:00Z" }),
    ].map((l) => [l.shareId, l]),
  );
  const routes = createShareRoutes({
    links,
    apps: new Map([["support", { id: "support", name: "Support bot" }]]),
    store,
    auth,
    now: () => NOW,
    // the API's rate limits are test/share-api-limits.test.ts's
    state: createMemoryClusterState({ failures: 5, cooldownMs: 30_000 }),
    server: { trustProxy: 0, shareApiQpm: 0 },
    page: { frameAncestors: ["'self'"] },
  });
  const handle = (fn: (e: H3Event, body: unknown) => unknown) => async (e: H3Event) => {
    try {
      return await fn(e, e.req.method === "POST" ? await e.req.json() : undefined);
    } catch (err) {
      return errorResponse(toGatewayError(err));
    }
  };
  app = new H3()
    .post("/api/share/init", handle(routes.init))
    .post("/api/share/chats", handle(routes.chats))
    .post("/api/share/chat", handle(routes.chat))
    .get("/chat/share", handle((e) => routes.page(e)));
});

afterEach(async () => {
  await auth.close();
  await store.close();
  await op.close();
});

async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await app.fetch(
    new Request(`http://gateway.test${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
  return { status: res.status, body: await res.json() };
}

let seq = 0;
async function seedChat(owner: ChatOwner, at: number, chatId = `chat-${++seq}`, user = `question ${seq}`, assistant = `answer to ${user}`) {
  expect(await store.appendRound({ appId: "support", chatId, owner, user, assistant, at })).toBe(true);
  return chatId;
}

describe("POST /api/share/init", () => {
  it("without authHost uses the localId as uid and returns the app name and the user's chats", async () => {
    const uid = "shareChat-1717243200000-a1b2";
    const chatId = await seedChat({ shareId: "open", uid }, NOW - DAY, "c-1", "Where is my order?");
    const res = await post("/api/share/init", { shareId: "open", outLinkUid: uid });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      shareId: "open",
      appName: "Support bot",
      uid,
      chats: [{ chatId, title: "Where is my order?", updatedAt: NOW - DAY }],
    });
    expect(op.calls).toEqual([]);
  });

  it("with authHost maps the token to the operator's uid", async () => {
    await seedChat({ shareId: "verified", uid: "u-tok-a" }, NOW - DAY, "c-verified");
    const res = await post("/api/share/init", { shareId: "verified", outLinkUid: "tok-a" });
    expect(res.status).toBe(200);
    expect(res.body.uid).toBe("u-tok-a");
    expect(res.body.chats.map((c: { chatId: string }) => c.chatId)).toEqual(["c-verified"]);
    expect(op.calls.map((c) => [c.path, c.body])).toEqual([["/shareAuth/init", { token: "tok-a" }]]);
  });

  it("shows the operator's refusal text", async () => {
    op.setMode("tok-bad", { kind: "reject", message: "Please log in again" });
    const res = await post("/api/share/init", { shareId: "verified", outLinkUid: "tok-bad" });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: "share_auth_rejected", message: "Please log in again" });
  });

  it("answers 404 for an unknown link and 410 for an expired one", async () => {
    const unknown = await post("/api/share/init", { shareId: "nope", outLinkUid: "shareChat-1-a" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("share_link_not_found");
    const expired = await post("/api/share/init", { shareId: "expired", outLinkUid: "shareChat-1-a" });
    expect(expired.status).toBe(410);
    expect(expired.body.error).toMatchObject({ code: "share_link_expired", message: expect.stringMatching(/expired/) });
  });

  it("answers 400 naming the field for a malformed body or uid", async () => {
    const missing = await post("/api/share/init", { shareId: "open" });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: "invalid_request", param: "outLinkUid" });
    expect(missing.body.error.message).toContain("outLinkUid");
    const badUid = await post("/api/share/init", { shareId: "open", outLinkUid: "a|b" });
    expect(badUid.status).toBe(400);
    expect(badUid.body.error.code).toBe("invalid_uid");
    const notObject = await post("/api/share/init", ["open"]);
    expect(notObject.status).toBe(400);
  });
});

describe("POST /api/share/chats", () => {
  it("keeps records apart between users and between links", async () => {
    await seedChat({ shareId: "open", uid: "shareChat-1-alice" }, NOW - 1000, "alice-open");
    await seedChat({ shareId: "open", uid: "shareChat-1-bob" }, NOW - 2000, "bob-open");
    await seedChat({ shareId: "second", uid: "shareChat-1-alice" }, NOW - 3000, "alice-second");
    await seedChat({ keyName: "web" }, NOW - 4000, "app-key-chat");
    const ids = async (shareId: string, outLinkUid: string) =>
      (await post("/api/share/chats", { shareId, outLinkUid })).body.chats.map((c: { chatId: string }) => c.chatId);
    expect(await ids("open", "shareChat-1-alice")).toEqual(["alice-open"]);
    expect(await ids("open", "shareChat-1-bob")).toEqual(["bob-open"]);
    expect(await ids("second", "shareChat-1-alice")).toEqual(["alice-second"]);
    expect(await ids("second", "shareChat-1-bob")).toEqual([]);
  });

  it("lists at most 20 chats, newest first", async () => {
    const owner = { shareId: "open", uid: "shareChat-1-many" };
    for (let i = 0; i < 21; i++) await seedChat(owner, NOW - (i + 1) * 60_000, `many-${i}`);
    const res = await post("/api/share/chats", { shareId: "open", outLinkUid: owner.uid });
    expect(res.status).toBe(200);
    expect(res.body.chats.map((c: { chatId: string }) => c.chatId)).toEqual(Array.from({ length: 20 }, (_, i) => `many-${i}`));
  });

  it("leaves out chats last updated more than 30 days ago", async () => {
    const owner = { shareId: "open", uid: "shareChat-1-old" };
    await seedChat(owner, NOW - 31 * DAY, "stale");
    await seedChat(owner, NOW - 29 * DAY, "recent");
    const res = await post("/api/share/chats", { shareId: "open", outLinkUid: owner.uid });
    expect(res.body.chats.map((c: { chatId: string }) => c.chatId)).toEqual(["recent"]);
  });

  it("with authHost reuses the cached init instead of calling the operator again", async () => {
    await post("/api/share/init", { shareId: "verified", outLinkUid: "tok-c" });
    const res = await post("/api/share/chats", { shareId: "verified", outLinkUid: "tok-c" });
    expect(res.status).toBe(200);
    expect(op.callsTo("/shareAuth/init")).toHaveLength(1);
  });
});

describe("POST /api/share/chat", () => {
  it("returns the user's own chat, oldest message first", async () => {
    const owner = { shareId: "verified", uid: "u-tok-d" };
    await seedChat(owner, NOW - 2000, "mine", "first question");
    await seedChat(owner, NOW - 1000, "mine", "second question");
    const res = await post("/api/share/chat", { shareId: "verified", outLinkUid: "tok-d", chatId: "mine" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      chatId: "mine",
      messages: [
        { role: "user", content: "first question", createdAt: NOW - 2000 },
        { role: "assistant", content: "answer to first question", createdAt: NOW - 2000 },
        { role: "user", content: "second question", createdAt: NOW - 1000 },
        { role: "assistant", content: "answer to second question", createdAt: NOW - 1000 },
      ],
    });
  });

  it("refuses a chat owned by another user, another link or an app key", async () => {
    await seedChat({ shareId: "open", uid: "shareChat-1-owner" }, NOW, "owned");
    await seedChat({ shareId: "second", uid: "shareChat-1-intruder" }, NOW, "other-link");
    await seedChat({ keyName: "web" }, NOW, "api-chat");
    // a chat of nobody in particular (an app key's, made before creators were recorded)
    await store.openChat("support", "nobodys", null, { limit: 0, maxBytes: 0, create: true });
    await store.appendRound({ appId: "support", chatId: "nobodys", owner: { keyName: "web" }, user: "question", assistant: "a", at: NOW });
    for (const chatId of ["owned", "other-link", "api-chat", "nobodys"]) {
      const res = await post("/api/share/chat", { shareId: "open", outLinkUid: "shareChat-1-intruder", chatId });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("chat_not_owned");
      expect(JSON.stringify(res.body)).not.toContain("question");
    }
  });

  it("pulls the newest whole rounds within 4 MiB of text", async () => {
    const owner = { shareId: "open", uid: "shareChat-1-big" };
    const big = (n: number) => String(n).repeat(1.5 * 1024 * 1024);
    for (let i = 1; i <= 3; i++) await seedChat(owner, NOW + i, "big", `question ${i}`, big(i));
    const res = await post("/api/share/chat", { shareId: "open", outLinkUid: owner.uid, chatId: "big" });
    expect(res.status).toBe(200);
    expect(res.body.messages.map((m: { content: string }) => m.content.slice(0, 10))).toEqual(["question 2", "2222222222", "question 3", "3333333333"]);
  });

  it("answers 404 for a chat that does not exist", async () => {
    const res = await post("/api/share/chat", { shareId: "open", outLinkUid: "shareChat-1-x", chatId: "missing" });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("chat_not_found");
  });

  it("answers 400 when chatId is missing", async () => {
    const res = await post("/api/share/chat", { shareId: "open", outLinkUid: "shareChat-1-x" });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("chatId");
  });
});

describe("GET /chat/share", () => {
  it("serves the chat window with a strict content security policy and no referrer", async () => {
    const res = await app.fetch(new Request("http://gateway.test/chat/share?shareId=open&authToken=tok-e"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await res.text();
    for (const id of ["input", "send", "messages", "chat-list", "new-chat", "error"]) expect(html).toContain(`id="${id}"`);
    expect(html).not.toContain("tok-e");
  });
});
