// No key, token or message content in logs or metrics, under traffic of every kind. (Every other
// test's gateway is also scanned for configured keys when it closes: see support/gateway.ts.)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config/load.js";
import { assertNoSecrets, startGateway, type StartedGateway } from "./support/gateway.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { APP_KEY, CHANNEL_KEY, GLOBAL_KEY, chat, coreConfig } from "./support/core-config.js";

const CONTENT = "content-marker-7f3a9 please keep this private";
const SHARE_TOKEN = "share-token-marker-51c2";
const LOCAL_ID = "shareChat-1700000000000-localmarker";
const METRICS_TOKEN = "metrics-token-marker-99";

let upstream: Upstream;
let operator: OperatorServer;
let gw: StartedGateway;
let dir: string;

beforeAll(async () => {
  upstream = await startUpstream();
  operator = await startOperatorServer();
  dir = mkdtempSync(join(tmpdir(), "sluice-secrets-"));
  gw = await startGateway(
    coreConfig(upstream.url, {
      server: { log: { level: "debug", destination: join(dir, "log.jsonl") }, metricsToken: METRICS_TOKEN },
      shareLinks: [
        { shareId: "guarded", appId: "a1", authHost: operator.url },
        { shareId: "open", appId: "a1" },
      ],
    }),
  );
});
afterAll(async () => {
  await gw.close();
  await operator.close();
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

const message = { role: "user", content: CONTENT };

async function sendEveryKind(): Promise<void> {
  const bodies: Array<[unknown, string | null]> = [
    [{ messages: [message] }, APP_KEY],
    [{ messages: [message], stream: true, chatId: "c-1", detail: true }, APP_KEY],
    [{ messages: [message], stream: true, stream_options: { include_usage: true } }, APP_KEY],
    [{ messages: [message] }, GLOBAL_KEY],
    [{ messages: [message] }, "sk-wrong-but-secret-key-123"],
    [{ messages: [message], temperature: "x" }, APP_KEY],
    [{ messages: [message], shareId: "guarded", outLinkUid: SHARE_TOKEN, chatId: "s-1", stream: true }, null],
    [{ messages: [message], shareId: "open", outLinkUid: LOCAL_ID, chatId: "s-2" }, null],
  ];
  for (const [body, key] of bodies) await (await chat(gw.url, body, key)).text();
  upstream.behave({ status: 500 });
  await (await chat(gw.url, { messages: [message] })).text();
  upstream.reset();
  for (const path of ["/api/share/init", "/api/share/chats"]) {
    await fetch(gw.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ shareId: "guarded", outLinkUid: SHARE_TOKEN }) });
  }
  await operator.waitForFinish(1);
}

describe("secrets and content", () => {
  it("keeps keys, tokens and message content out of the request log and /metrics", async () => {
    await sendEveryKind();
    const metricsRes = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(metricsRes.status).toBe(200);
    const metrics = await metricsRes.text();
    await gw.gateway.close(); // flushes the log
    const log = readFileSync(join(dir, "log.jsonl"), "utf8");
    expect(log.split("\n").filter(Boolean).length).toBeGreaterThanOrEqual(10);
    for (const text of [log, metrics]) {
      for (const secret of [APP_KEY, GLOBAL_KEY, CHANNEL_KEY, METRICS_TOKEN, "sk-wrong-but-secret-key-123", SHARE_TOKEN, LOCAL_ID, "content-marker-7f3a9"]) {
        expect(text.includes(secret), `${secret.slice(0, 12)}… leaked`).toBe(false);
      }
    }
  });

  it("the suite-wide guard notices a configured key in a log", () => {
    const config = parseConfig(coreConfig("http://127.0.0.1:1"), {});
    expect(() => assertNoSecrets(config, { log: `{"k":"${APP_KEY}"}` })).toThrow(/configured key/);
    expect(() => assertNoSecrets(config, { log: "{}" })).not.toThrow();
  });

  it("protects /metrics with server.metricsToken", async () => {
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(401);
  });
});
