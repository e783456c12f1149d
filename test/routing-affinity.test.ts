// Session affinity (docs/routing.md#affinity-key): every signal — x-session-id, prompt_cache_key,
// user, safety_identifier, a FastGPT chat (app keys and share-link users), Anthropic
// metadata.user_id, Responses prompt_cache_key, and else the prompt's start — keeps a session's
// turns on one of four replicas; two gateways with no shared state agree; a reload that removes one
// channel moves only the sessions that were on it; the session never reaches a log or an upstream.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config/load.js";
import { createGateway } from "../src/gateway.js";
import { createHttpServer } from "../src/http/server.js";
import { createStore } from "../src/store/index.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { MODEL, fleetConfig, post, replicaOf, startReplicas } from "./support/replica-fleet.js";
import type { Upstream } from "./support/upstream.js";

const TURNS = 6;
const SECRET_SESSION = "session-secret-7f3a9c";

let replicas: Upstream[];
let gw: StartedGateway;
beforeAll(async () => {
  replicas = await startReplicas();
  gw = await startGateway(fleetConfig(replicas));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(replicas.map((r) => r.close()));
});

/** A chat turn whose first user message differs every turn: only the signal can keep it in place. */
const chatTurn = (turn: number, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) => () =>
  post(gw.url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: `unrelated question ${turn} ${Math.random()}` }], ...extra }, headers);

/** The replicas a session's turns went to (one, when it is kept). */
async function replicasOfSession(turn: (i: number) => () => Promise<Response>): Promise<Set<number>> {
  const seen = new Set<number>();
  for (let i = 0; i < TURNS; i++) seen.add(await replicaOf(replicas, turn(i)));
  return seen;
}

describe("each affinity signal keeps a session on one replica", () => {
  const signals: Array<[string, (s: string) => (i: number) => () => Promise<Response>]> = [
    ["the x-session-id header", (s) => (i) => chatTurn(i, {}, { "x-session-id": s })],
    ["chat's prompt_cache_key", (s) => (i) => chatTurn(i, { prompt_cache_key: s })],
    ["chat's user", (s) => (i) => chatTurn(i, { user: s })],
    ["chat's safety_identifier", (s) => (i) => chatTurn(i, { safety_identifier: s })],
    ["a FastGPT chatId", (s) => (i) => chatTurn(i, { chatId: s })],
    [
      "a share-link user's chat",
      (s) => (i) => () =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ shareId: "pub", outLinkUid: "alice", chatId: s, messages: [{ role: "user", content: `question ${i} ${Math.random()}` }] }),
        }),
    ],
    [
      "Anthropic metadata.user_id",
      (s) => (i) => () =>
        post(gw.url, "/v1/messages", { model: MODEL, max_tokens: 20, metadata: { user_id: `user_x_account_y_session_${s}` }, messages: [{ role: "user", content: `task ${i} ${Math.random()}` }] }, { "anthropic-version": "2023-06-01" }),
    ],
    ["Responses prompt_cache_key", (s) => (i) => () => post(gw.url, "/v1/responses", { model: MODEL, store: false, prompt_cache_key: s, input: `task ${i} ${Math.random()}` })],
  ];

  for (const [name, turn] of signals) {
    it(`${name}: every turn on one replica, and sessions spread`, async () => {
      const homes = new Set<number>();
      for (const session of ["s-alpha", "s-beta", "s-gamma", "s-delta", "s-epsilon"]) {
        const seen = await replicasOfSession(turn(`${name}-${session}`));
        expect(seen.size, `${name} ${session}`).toBe(1);
        homes.add([...seen][0]!);
      }
      expect(homes.size).toBeGreaterThan(1);
    });
  }

  // §16's spreading of sessions that share a prefix holds with routing.affinity "session" only: by
  // prefix (the default) they gather where the prompt is (test/routing-prefix.test.ts)
  it("without a signal, the system prompt and first user turn: one agent task stays, its other tasks spread (affinity: session)", async () => {
    const bySession = await startGateway(fleetConfig(replicas, { extra: { routing: { affinity: "session" } } }));
    const system = { role: "system", content: "You are a coding agent. ".repeat(50) };
    const homes = new Set<number>();
    for (let task = 0; task < 6; task++) {
      const history: Array<{ role: string; content: string }> = [system, { role: "user", content: `task ${task}: fix the tests` }];
      const seen = new Set<number>();
      for (let i = 0; i < TURNS; i++) {
        seen.add(await replicaOf(replicas, () => post(bySession.url, "/v1/chat/completions", { model: MODEL, messages: history })));
        history.push({ role: "assistant", content: `step ${i} done` }, { role: "user", content: `tool result ${i}` });
      }
      expect(seen.size).toBe(1);
      homes.add([...seen][0]!);
    }
    await bySession.close();
    expect(homes.size).toBeGreaterThan(1);
  });

  it("never logs the session nor sends prompt_cache_key or x-session-id upstream", async () => {
    const logPath = join(mkdtempSync(join(tmpdir(), "sluice-routing-log-")), "requests.log");
    const logged = await startGateway(fleetConfig(replicas, { extra: { server: { log: { level: "debug", destination: logPath } } } }));
    for (const r of replicas) r.requests.length = 0;
    try {
      await (await post(logged.url, "/v1/chat/completions", { model: MODEL, prompt_cache_key: SECRET_SESSION, messages: [{ role: "user", content: "hi" }] })).text();
      await (await post(logged.url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "hi" }] }, { "x-session-id": SECRET_SESSION })).text();
      await (await post(logged.url, "/v1/responses", { model: MODEL, store: false, prompt_cache_key: SECRET_SESSION, input: "hi" })).text();
      // by prefix (the default) the first request places the session, the next two keep it
      const text = await (await fetch(`${logged.url}/metrics`)).text();
      expect(text).toMatch(/sluice_route_decisions_total\{model="m1",decision="least_loaded"\} 1\n/);
      expect(text).toMatch(/sluice_route_decisions_total\{model="m1",decision="pinned"\} 2\n/);
    } finally {
      await logged.close();
    }
    const sent = replicas.flatMap((r) => r.requests);
    expect(sent).toHaveLength(3);
    for (const r of sent) {
      expect(JSON.stringify(r.body)).not.toContain(SECRET_SESSION);
      expect(r.body).not.toHaveProperty("prompt_cache_key");
      expect(r.headers).not.toHaveProperty("x-session-id");
    }
    const log = readFileSync(logPath, "utf8");
    expect(log).toContain('"route":"/v1/chat/completions"');
    expect(log).not.toContain(SECRET_SESSION);
  });
});

describe("no shared state", () => {
  it("two gateways put each session on the same replica", async () => {
    const other = await startGateway(fleetConfig(replicas));
    try {
      for (let s = 0; s < 12; s++) {
        const ask = (url: string) => () => post(url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: `q ${Math.random()}` }] }, { "x-session-id": `shared-${s}` });
        expect(await replicaOf(replicas, ask(other.url))).toBe(await replicaOf(replicas, ask(gw.url)));
      }
    } finally {
      await other.close();
    }
  });

  it("a reload that removes one channel moves only the sessions that were on it", async () => {
    let raw = fleetConfig(replicas, { extra: { server: { log: { level: "silent" } }, store: { driver: "memory" } } });
    const config = parseConfig(raw, {});
    const store = createStore(config.store);
    const gateway = createGateway(config, { store, loadConfig: () => parseConfig(raw, {}) });
    const server: Server = createHttpServer(toNodeHandler(gateway.app), config.server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const ask = (s: number) => () => post(url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "q" }] }, { "x-session-id": `reload-${s}` });
      const before: number[] = [];
      for (let s = 0; s < 24; s++) before.push(await replicaOf(replicas, ask(s)));
      const removed = before[0]!;
      raw = { ...raw, channels: (raw.channels as unknown[]).filter((_, i) => i !== removed) };
      expect((await gateway.reload()).ok).toBe(true);
      for (let s = 0; s < 24; s++) {
        const now = await replicaOf(replicas, ask(s));
        if (before[s] === removed) expect(now).not.toBe(removed);
        else expect(now, `session ${s}`).toBe(before[s]);
      }
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await gateway.close();
      await store.close();
    }
  });
});

