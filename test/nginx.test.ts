// Two built gateways (memory store) behind the shipped deploy/nginx.conf, run by the real nginx:
// streams are relayed chunk by chunk, requests spread over both instances, request ids pass
// through, the gateway's own limits answer, and an instance stopped with SIGTERM under load loses
// no request (nginx sends new ones to the other). Both gone: nginx's own error in the OpenAI shape.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MainProcess } from "./support/main-process.js";
import { chatsServed, startLoad, useBehindNginx } from "./support/nginx.js";
import { parseSse, readUntil } from "./support/sse.js";
import { UPSTREAM_DEFAULTS, startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-nginx-test-app-key";

let dir = "";
let upstream: Upstream;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sluice-nginx-test-"));
  upstream = await startUpstream({ chunks: 4 });
});
afterAll(async () => {
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One config file for both instances: the test upstream, a memory store, request lines logged. */
function writeConfig(name: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      server: { shutdownTimeoutMs: 10_000, log: { level: "info" } },
      store: { driver: "memory" },
      channels: [{ name: "up", baseUrl: upstream.url, key: "channel-key-nginx", models: ["m"], healthCheck: { intervalMs: 0 } }],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
      apps: [{ id: "app", model: "m" }],
      apiKeys: [{ name: "k", kind: "app", appId: "app", key: KEY }],
    }),
  );
  return path;
}

function ask(url: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });
}

/** Reads a whole answer: a stream must end with [DONE] and carry no error event. */
async function answered(res: Response, stream: boolean): Promise<number> {
  const text = await res.text();
  if (res.status === 200 && stream) {
    const frames = parseSse(text);
    if (frames.at(-1)?.data !== "[DONE]" || frames.some((f) => f.data.includes('"error"'))) return -1;
  }
  return res.status;
}

describe("two instances behind nginx", () => {
  const pair = useBehindNginx(() => writeConfig("pair.json"));

  it("relays a stream chunk by chunk: the first chunk arrives while the upstream is still answering", async () => {
    // a minute between chunks: a buffered relay could not show the first one within the test's time
    upstream.behave({ chunkDelayMs: 60_000 });
    try {
      const res = await ask(pair.nginx.url, { stream: true });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
      const { text, reader } = await readUntil(res, (t) => t.includes('"content"'));
      const first = UPSTREAM_DEFAULTS.text.slice(0, Math.ceil(UPSTREAM_DEFAULTS.text.length / 4));
      expect(text).toContain(`"content":${JSON.stringify(first)}`);
      // the client leaving reaches the upstream through nginx and the gateway
      await reader.cancel();
      await upstream.waitForAbort();
      // the cut stream is counted once it has ended: counts in the next test start after it
      await expect.poll(async () => (await Promise.all(pair.instances.map((i) => chatsServed(i.url)))).reduce((a, b) => a + b)).toBe(1);
    } finally {
      upstream.reset();
    }
  });

  it("spreads requests over both instances", async () => {
    const before = await Promise.all(pair.instances.map((i) => chatsServed(i.url, 200)));
    for (let i = 0; i < 20; i++) expect(await answered(await ask(pair.nginx.url, { stream: i % 2 === 0 }), i % 2 === 0)).toBe(200);
    const after = await Promise.all(pair.instances.map((i) => chatsServed(i.url, 200)));
    const served = after.map((n, i) => n - before[i]!);
    expect(served.every((n) => n > 0)).toBe(true);
    expect(served[0]! + served[1]!).toBe(20);
  });

  it("passes the client's X-Request-Id through, and gives one when the client sent none", async () => {
    const traced = await ask(pair.nginx.url, {}, { "x-request-id": "trace-42" });
    expect(traced.headers.get("x-request-id")).toBe("trace-42");
    const untraced = await ask(pair.nginx.url, {});
    // nginx's $request_id (the gateway's own would be a UUID): one id in both logs
    const id = untraced.headers.get("x-request-id")!;
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    await Promise.all([traced.text(), untraced.text()]);
    await expect.poll(() => pair.nginx.accessLog()).toContain(`request_id=${id}`);
    expect(pair.nginx.accessLog()).toContain("request_id=trace-42");
  });

  it("logs paths without their query string: a share window's authToken never reaches the access log", async () => {
    const token = "tok-nginx-secret-4711";
    const res = await fetch(`${pair.nginx.url}/chat/share?shareId=demo&authToken=${token}`);
    expect(res.status).toBe(200);
    await res.text();
    await expect.poll(() => pair.nginx.accessLog()).toContain("/chat/share");
    expect(pair.nginx.accessLog()).not.toContain(token);
    expect(pair.nginx.accessLog()).not.toContain("authToken");
    expect(pair.nginx.accessLog()).toContain('"GET /chat/share HTTP/1.1" 200');
  });

  it("refuses an oversized body as the gateway does: 413 request_too_large, the same message", async () => {
    const oversized = (url: string) =>
      fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(2 * 1024 * 1024) }] }),
      });
    const [balanced, direct] = await Promise.all([oversized(pair.nginx.url), oversized(pair.instances[0]!.url)]);
    expect(balanced.status).toBe(413);
    expect(await balanced.json()).toEqual(await direct.json());
    // under the limit, the body reaches an instance
    const big = await ask(pair.nginx.url, { messages: [{ role: "user", content: "y".repeat(1024 * 1024) }] });
    expect(big.status).not.toBe(413);
    await big.text();
  });

  it("keeps /metrics off the balancer (Prometheus scrapes each instance)", async () => {
    const res = await fetch(`${pair.nginx.url}/metrics`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });
});

describe("an instance stopped under load", () => {
  const pair = useBehindNginx(() => writeConfig("drain.json"));
  beforeAll(() => upstream.behave({ chunkDelayMs: 10 })); // streams in flight when the signal comes
  afterAll(() => upstream.reset());

  it("SIGTERM to one instance mid-load: every request is answered, new ones by the other instance", async () => {
    const [leaving, staying] = pair.instances as [MainProcess, MainProcess];
    let exited = false;
    let afterExit = 0; // requests started once the leaving instance had exited
    let sent = 0;
    const load = startLoad(8, async (worker) => {
      const stream = (worker + sent++) % 2 === 0;
      if (exited) afterExit++;
      return answered(await ask(pair.nginx.url, { stream }), stream);
    });

    await load.reached(40);
    leaving.proc.kill("SIGTERM");
    expect(await leaving.exited).toBe(0);
    const stayingBefore = await chatsServed(staying.url, 200);
    exited = true;
    await load.reached(load.results.length + 60);
    const statuses = await load.stop();

    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(afterExit).toBeGreaterThan(0);
    expect((await chatsServed(staying.url, 200)) - stayingBefore).toBeGreaterThanOrEqual(afterExit);
    // each request answered once: the leaving instance's 200s (its request log) and the other's add up
    const leftWith200 = leaving.stdout().split("\n").filter((l) => l.includes('"route":"/v1/chat/completions"') && l.includes('"status":200')).length;
    expect(leftWith200 + (await chatsServed(staying.url, 200))).toBe(statuses.length);
  });

  it("with no instance left, nginx answers 502 in the OpenAI error shape", async () => {
    const [, staying] = pair.instances as [MainProcess, MainProcess];
    staying.proc.kill("SIGTERM");
    expect(await staying.exited).toBe(0);
    const res = await ask(pair.nginx.url, {});
    expect(res.status).toBe(502);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await res.json()).toEqual({
      error: { message: expect.stringContaining("retry"), type: "api_error", code: "instance_unavailable", param: null },
    });
  });
});
