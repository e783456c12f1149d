// Two built gateways on one throwaway PostgreSQL (records) and one redis-server (shared counters),
// behind the shipped deploy/nginx.conf: a conversation and share records continued on the other
// instance, a budget and a QPM held under 200 concurrent requests through both, a key revoked on
// one refused on the other within a second, PostgreSQL or Redis down answered by the gateways (not
// nginx) and served again once back, and kill -9 of one instance under load losing nothing a
// client received (its usage row and its round are in PostgreSQL).
import pg from "pg";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MainProcess } from "./support/main-process.js";
import { startLoad, useBehindNginx } from "./support/nginx.js";
import { usePostgres } from "./support/postgres.js";
import { useRedis } from "./support/redis.js";
import { parseSse } from "./support/sse.js";
import { UPSTREAM_DEFAULTS, startUpstream, type Upstream } from "./support/upstream.js";

const CHAT_KEY = "sk-instances-chat-key";
const BUDGET_KEY = "sk-instances-budget-key";
const QPM_KEY = "sk-instances-qpm-key";
const COUNTED_KEY = "sk-instances-counted-key";
const ADMIN_KEY = "sk-instances-admin-key";
/** The test upstream reports 11 + 13 tokens; at 1,000 points per 1,000 tokens an answer costs 24. */
const POINTS_PER_ANSWER = 24;
const BUDGET = 40 * POINTS_PER_ANSWER;
const QPM = 30;
/** Counted at more than the upstream's 11 prompt tokens: a reservation is never below the actual points. */
const LONG_QUESTION = "Please answer this question about the twenty one numbers one two three four five six seven eight nine ten eleven twelve.";

const postgres = usePostgres();
const redis = useRedis();
let upstream: Upstream;
let db: pg.Pool;
let dir = "";
let configPath = "";
beforeAll(async () => {
  upstream = await startUpstream({ record: true });
  const url = await postgres.createDatabase();
  db = new pg.Pool({ connectionString: url, max: 2 });
  db.on("error", () => {}); // an idle connection's end when the server stops: the next query says so
  dir = mkdtempSync(join(tmpdir(), "sluice-instances-"));
  configPath = join(dir, "config.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      server: { shutdownTimeoutMs: 5_000, log: { level: "warn" } },
      store: { driver: "postgres", url },
      cluster: { redisUrl: redis.server().url },
      channels: [{ name: "up", baseUrl: upstream.url, key: "channel-key-instances", models: ["m"], healthCheck: { intervalMs: 0 } }],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100, charsPointsPrice: 1000 }],
      apps: [
        { id: "chat", model: "m", history: 6 },
        { id: "budget", model: "m", maxUsagePoints: BUDGET },
        { id: "qpm", model: "m", qpm: QPM },
        { id: "counted", model: "m", qpm: 100_000 },
      ],
      apiKeys: [
        { name: "chat-key", kind: "app", appId: "chat", key: CHAT_KEY },
        { name: "budget-key", kind: "app", appId: "budget", key: BUDGET_KEY },
        { name: "qpm-key", kind: "app", appId: "qpm", key: QPM_KEY },
        { name: "counted-key", kind: "app", appId: "counted", key: COUNTED_KEY },
        { name: "admin", kind: "admin", key: ADMIN_KEY },
      ],
      shareLinks: [{ shareId: "public", appId: "chat" }],
    }),
  );
});
afterAll(async () => {
  await db?.end();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});
const pair = useBehindNginx(() => configPath);
const instance = (i: 0 | 1) => pair.instances[i]!.url;

function ask(url: string, key: string | null, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });
}

/** The answer's text when the whole answer arrived (a stream up to [DONE], no error event), else undefined. */
async function answerOf(res: Response, stream: boolean): Promise<string | undefined> {
  let text: string;
  try {
    text = await res.text();
  } catch {
    return undefined; // the connection was cut mid-answer
  }
  if (res.status !== 200) return undefined;
  if (!stream) return (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
  const frames = parseSse(text);
  if (frames.at(-1)?.data !== "[DONE]" || frames.some((f) => f.data.includes('"error"'))) return undefined;
  return frames
    .filter((f) => f.data !== "[DONE]")
    .map((f) => (JSON.parse(f.data) as { choices: Array<{ delta?: { content?: string } }> }).choices[0]?.delta?.content ?? "")
    .join("");
}

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

describe("records shared by the instances", () => {
  it("continues a conversation on the other instance, then through nginx", async () => {
    const turn = async (url: string, content: string) => {
      const res = await ask(url, CHAT_KEY, { chatId: "across", messages: [{ role: "user", content }] });
      expect(await answerOf(res, false)).toBe(UPSTREAM_DEFAULTS.text);
    };
    await turn(instance(0), "first question");
    await turn(instance(1), "second question");
    expect(upstream.last().body.messages.map((m) => m.content)).toEqual(["first question", UPSTREAM_DEFAULTS.text, "second question"]);
    await turn(pair.nginx.url, "third question");
    expect(upstream.last().body.messages.map((m) => m.content)).toEqual([
      "first question",
      UPSTREAM_DEFAULTS.text,
      "second question",
      UPSTREAM_DEFAULTS.text,
      "third question",
    ]);
  });

  it("lists a share-link user's chat on the other instance", async () => {
    const user = { shareId: "public", outLinkUid: "browser-local-id-1" };
    const res = await ask(instance(0), null, { ...user, chatId: "shared-chat", messages: [{ role: "user", content: "a shared question" }] });
    expect(await answerOf(res, false)).toBe(UPSTREAM_DEFAULTS.text);

    const post = (path: string, body: unknown) =>
      fetch(`${instance(1)}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const chats = (await (await post("/api/share/chats", user)).json()) as { chats: Array<{ chatId: string }> };
    expect(chats.chats.map((c) => c.chatId)).toEqual(["shared-chat"]);
    const chat = (await (await post("/api/share/chat", { ...user, chatId: "shared-chat" })).json()) as { messages: Array<{ role: string; content: string }> };
    expect(chat.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "a shared question"],
      ["assistant", UPSTREAM_DEFAULTS.text],
    ]);
  });
});

describe("limits held across instances under 200 concurrent requests", () => {
  it("a budget: never more points spent than allowed, each answer billed once", async () => {
    const body = { messages: [{ role: "user", content: LONG_QUESTION }], max_tokens: 13 };
    const answers = await Promise.all(Array.from({ length: 200 }, () => ask(pair.nginx.url, BUDGET_KEY, body)));
    const ok = answers.filter((r) => r.status === 200);
    const refused = await Promise.all(answers.filter((r) => r.status !== 200).map(async (r) => `${r.status} ${await errorCode(r)}`));
    await Promise.all(ok.map((r) => r.text()));

    expect(ok.length).toBeGreaterThan(0);
    expect(new Set(refused)).toEqual(new Set(["429 insufficient_quota"]));
    expect(ok.length * POINTS_PER_ANSWER).toBeLessThanOrEqual(BUDGET);
    const { rows } = await db.query<{ points: number }>("SELECT points FROM spend WHERE scope = 'app:budget'");
    expect(rows[0]!.points).toBe(ok.length * POINTS_PER_ANSWER);
  });

  it("a QPM: exactly the limit answered in the minute, the rest refused", async () => {
    const answers = await Promise.all(Array.from({ length: 200 }, () => ask(pair.nginx.url, QPM_KEY, {})));
    const refused = await Promise.all(answers.filter((r) => r.status !== 200).map(async (r) => `${r.status} ${await errorCode(r)}`));
    await Promise.all(answers.filter((r) => r.status === 200).map((r) => r.text()));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(QPM);
    expect(refused).toHaveLength(200 - QPM);
    expect(new Set(refused).size).toBe(1);
    expect(refused[0]).toMatch(/^429 /);
  });
});

describe("keys", () => {
  const admin = (url: string, method: string, path: string, body?: unknown) =>
    fetch(`${url}/api/admin/keys${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it("a key created on one instance works on the other; revoked there, the other refuses it within 1 s", async () => {
    const created = await admin(instance(0), "POST", "", { name: "roaming", kind: "app", appId: "chat" });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    // the key-change notice carries the new key's row: the other instance takes it at once
    expect((await ask(instance(1), key, {})).status).toBe(200);

    expect((await admin(instance(0), "DELETE", "/roaming")).status).toBe(200);
    expect((await ask(instance(0), key, {})).status).toBe(401);
    await expect.poll(async () => (await ask(instance(1), key, {})).status, { interval: 20, timeout: 1_000 }).toBe(401);
  });
});

describe("keys, created in a row", () => {
  it("each key created on one instance answers on the other at once, as behind a load balancer", async () => {
    for (let i = 0; i < 10; i++) {
      const created = await fetch(`${instance(0)}/api/admin/keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ name: `fresh-${i}`, kind: "app", appId: "chat" }),
      });
      const { key } = (await created.json()) as { key: string };
      expect((await ask(instance(1), key, {})).status).toBe(200);
    }
  });
});

describe("PostgreSQL and Redis down and back, through nginx", () => {
  /** "200", or the error's status and code */
  const outcome = async (key: string, body: Record<string, unknown> = {}) => {
    const res = await ask(pair.nginx.url, key, body);
    return res.status === 200 ? (await res.text(), "200") : `${res.status} ${await errorCode(res)}`;
  };
  /** More requests than nginx lets fail before it skips both instances. */
  const tenOutcomes = async (key: string, body?: Record<string, unknown>) => {
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add(await outcome(key, body));
    return seen;
  };

  it("PostgreSQL down: clients get the gateway's 503 store_unavailable, never nginx's 502; served again once it is back", async () => {
    const body = { chatId: "through-an-outage" };
    expect(await outcome(CHAT_KEY, body)).toBe("200");
    await postgres.server().stop();
    try {
      expect(await tenOutcomes(CHAT_KEY, body)).toEqual(new Set(["503 store_unavailable"]));
    } finally {
      await postgres.server().start();
    }
    await expect.poll(() => outcome(CHAT_KEY, body)).toBe("200");
  });

  it("Redis down: requests that need shared counters get 503 store_unavailable; served again once it is back", async () => {
    expect(await outcome(COUNTED_KEY)).toBe("200");
    await redis.server().stop();
    try {
      expect(await tenOutcomes(COUNTED_KEY)).toEqual(new Set(["503 store_unavailable"]));
    } finally {
      await redis.server().start();
    }
    await expect.poll(() => outcome(COUNTED_KEY)).toBe("200");
  });
});

describe("kill -9 of one instance under load", () => {
  it("every answer a client received has its usage row and its round in PostgreSQL", async () => {
    upstream.behave({ chunkDelayMs: 5 }); // streams in flight when the instance dies
    const [killed] = pair.instances as [MainProcess, MainProcess];
    let sent = 0;
    const load = startLoad(8, async (worker) => {
      const n = sent++;
      const stream = (worker + n) % 2 === 0;
      const chatId = `load-${n}`;
      const res = await ask(pair.nginx.url, CHAT_KEY, { chatId, stream }).catch(() => undefined);
      return { chatId, answer: res && (await answerOf(res, stream)) };
    });
    try {
      await load.reached(40);
      killed.proc.kill("SIGKILL");
      await killed.exited;
      await load.reached(load.results.length + 60);
    } finally {
      await load.stop();
      upstream.reset();
    }

    const received = load.results.filter((r) => r.answer !== undefined);
    expect(received.length).toBeGreaterThanOrEqual(100);
    const ids = received.map((r) => r.chatId);
    const usage = await db.query<{ chat_id: string }>("SELECT DISTINCT chat_id FROM usage WHERE app_id = 'chat' AND status = 200 AND chat_id = ANY($1)", [ids]);
    const rounds = await db.query<{ chat_id: string; assistant_turn: string }>(
      "SELECT chat_id, assistant_turn FROM rounds WHERE app_id = 'chat' AND chat_id = ANY($1)",
      [ids],
    );
    expect(ids.filter((id) => !usage.rows.some((row) => row.chat_id === id))).toEqual([]);
    expect(received.filter((r) => !rounds.rows.some((row) => row.chat_id === r.chatId && row.assistant_turn === r.answer))).toEqual([]);
  });
});
