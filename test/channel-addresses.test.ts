// Where a channel written through FastGPT's AI Proxy API may point (docs/fastgpt.md#channel-writes,
// docs/configuration.md#top-level `allowLinkLocalChannels`): not at a link-local or cloud-metadata
// address, nor at a name resolving to one, checked again after DNS on every connection (issue 36).
// No test here reaches such an address: every outbound connection of this process off 127.0.0.1/::1
// is recorded and refused, and host names resolve only through the test's own table, never real DNS.
import net, { isIP, type LookupFunction, type NetConnectOpts } from "node:net";
import tls from "node:tls";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createAddressGuard, type Resolve } from "../src/upstream/address-guard.js";
import { coreConfig } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-aiproxy-admin-key-0001";
const LOOPBACK = new Set(["127.0.0.1", "::1"]);

/** Hosts a connection of this process went for off loopback (each refused before any packet left). */
const attempts: string[] = [];
const realConnect = net.connect;
const refused = (host: string): net.Socket => {
  attempts.push(host);
  const socket = new net.Socket();
  process.nextTick(() => socket.destroy(Object.assign(new Error(`test: no connection off loopback (${host})`), { code: "ECONNREFUSED" })));
  return socket;
};
/** net.connect, on loopback only: a name is resolved by the lookup given (the gateway's), and only a loopback answer connects. */
function loopbackConnect(...args: unknown[]): net.Socket {
  if (typeof args[0] !== "object" || args[0] === null) return refused(String(args[1] ?? args[0]));
  const options = args[0] as NetConnectOpts & { host?: string; lookup?: LookupFunction; path?: string };
  const host = options.host ?? "localhost";
  if (isIP(host)) return LOOPBACK.has(host) ? (realConnect as (...a: unknown[]) => net.Socket)(...args) : refused(host);
  const lookup = options.lookup;
  if (!lookup) return refused(host); // the system's resolver: real DNS, never
  const checked: LookupFunction = (hostname, opts, callback) =>
    lookup(hostname, opts, (err, address, family) => {
      if (err) return callback(err, address, family);
      const found = Array.isArray(address) ? address.map((a) => a.address) : [address];
      const off = found.filter((a) => !LOOPBACK.has(a));
      if (off.length > 0) return void (attempts.push(...off), callback(Object.assign(new Error("test: resolved off loopback"), { code: "ECONNREFUSED" }), "", 0));
      callback(null, address, family);
    });
  return (realConnect as (...a: unknown[]) => net.Socket)({ ...options, lookup: checked }, ...args.slice(1));
}

/** The test's DNS: names it knows, each to one address; any other name does not resolve. */
const names = new Map<string, string>();
const resolve: Resolve = async (hostname) => {
  const address = names.get(hostname);
  if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return [{ address, family: isIP(address) }];
};

function call(base: string, method: string, path: string, body?: unknown) {
  return fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body !== undefined && { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
async function envelope(res: Response) {
  const text = await res.text();
  return { status: res.status, text, ...(JSON.parse(text) as { success: boolean; message?: string; data?: Record<string, unknown> }) };
}
function config(upstream: string, extra: Record<string, unknown> = {}) {
  const base = coreConfig(upstream) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  base.apiKeys.push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY });
  for (const c of base.channels) c.healthCheck = { intervalMs: 0 };
  return { ...base, ...extra };
}

let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream();
  vi.spyOn(net, "connect").mockImplementation(loopbackConnect as typeof net.connect);
  vi.spyOn(net, "createConnection").mockImplementation(loopbackConnect as typeof net.connect);
  vi.spyOn(tls, "connect").mockImplementation(((options: { host?: string }) => refused(`tls:${options?.host}`)) as unknown as typeof tls.connect);
});
afterAll(async () => {
  vi.restoreAllMocks();
  await upstream?.close();
});
const started: StartedGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close()));
  upstream.reset();
  attempts.length = 0;
  names.clear();
});
async function gateway(extra: Record<string, unknown> = {}): Promise<StartedGateway> {
  const g = await startGateway(config(upstream.url, extra), { resolve });
  started.push(g);
  return g;
}

describe("a channel's base_url written through the API", () => {
  it("refuses link-local and cloud-metadata addresses, and names resolving to them, before anything connects", async () => {
    const g = await gateway();
    names.set("metadata.test", "169.254.169.254");
    names.set("metadata6.test", "fd00:ec2::254");
    // Before (issue 36): POST http://169.254.169.254 answered 200 and the new channel's health check
    // at once went for 169.254.169.254 (recorded here); the channel test would return 1 KB of its answer.
    for (const base_url of [
      "http://169.254.169.254",
      "http://169.254.169.254/latest/meta-data/",
      "http://0xa9fea9fe",
      "http://[fe80::1]:8000",
      "http://[fd00:ec2::254]",
      "http://[::ffff:169.254.169.254]",
      "http://[64:ff9b::169.254.169.254]",
      "http://100.100.100.200",
      "http://metadata.test:8000",
      "http://metadata6.test",
    ]) {
      const created = await envelope(await call(g.url, "POST", "/api/channel/", { type: 1, name: "meta", base_url, models: ["m1"], key: "" }));
      expect(created, base_url).toMatchObject({ status: 400, success: false });
      expect(created.message, base_url).toMatch(/^base_url: .* a link-local or cloud-metadata address \(allowLinkLocalChannels in config\.json allows it\)$/);
    }
    // moving config.json's channel there is refused too (its key dropped, so only the address is in question)
    expect(await envelope(await call(g.url, "PUT", "/api/channel/1", { base_url: "http://169.254.169.254", key: "" }))).toMatchObject({ status: 400, message: /^base_url: 169\.254\.169\.254 is a link-local/ });
    expect(((await envelope(await call(g.url, "GET", "/api/channels/all"))).data as unknown as unknown[]).length).toBe(2);
    expect(attempts).toEqual([]);
  });

  it("checks the address again on every connection: a name that resolved to loopback and now to 169.254.169.254 is not connected to", async () => {
    const g = await gateway();
    names.set("model.test", "127.0.0.1");
    const port = new URL(upstream.url).port;
    const created = await envelope(await call(g.url, "POST", "/api/channel/", { type: 1, name: "named", base_url: `http://model.test:${port}`, models: ["m1"], key: "" }));
    expect(created).toMatchObject({ status: 200, data: { id: 3 } });
    names.set("model.test", "169.254.169.254");
    const test = await envelope(await call(g.url, "GET", "/api/channel/3/test/m1"));
    expect(test).toMatchObject({ success: false, data: { success: false } });
    expect(upstream.requests).toHaveLength(0);
    expect(attempts).toEqual([]);
  });

  it("lets an operator allow them (allowLinkLocalChannels: true)", async () => {
    const g = await gateway({ allowLinkLocalChannels: true });
    expect(await envelope(await call(g.url, "POST", "/api/channel/", { type: 1, name: "meta", base_url: "http://169.254.169.254", models: ["m1"], key: "" }))).toMatchObject({ status: 200 });
    // the gateway went for it (the test refused the connection: nothing left this host)
    await vi.waitFor(() => expect(attempts).toContain("169.254.169.254"), { timeout: 2_000, interval: 10 });
  });

  it("never follows a redirect with the channel's key", async () => {
    const target = await startUpstream();
    const redirecting = createServer((req, res) => (req.resume(), res.writeHead(307, { location: `${target.url}${req.url}` }).end()));
    await new Promise<void>((done) => redirecting.listen(0, "127.0.0.1", done));
    try {
      const g = await gateway();
      const base_url = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`;
      expect((await call(g.url, "POST", "/api/channel/", { type: 1, name: "moved", base_url, models: ["m1"], key: "moved-channel-key-0004" })).status).toBe(200);
      expect(await envelope(await call(g.url, "GET", "/api/channel/3/test/m1"))).toMatchObject({ success: false, data: { code: 307 } });
      expect(target.requests).toHaveLength(0);
    } finally {
      redirecting.closeAllConnections();
      await new Promise((done) => redirecting.close(done));
      await target.close();
    }
  });
});

describe("the address guard", () => {
  it("keeps loopback and private ranges allowed: private model servers live there", async () => {
    const guard = createAddressGuard({ allowed: () => false, resolve });
    names.set("gpu.internal", "10.1.2.3");
    for (const url of ["http://127.0.0.1:8000", "http://[::1]:8000", "http://10.0.0.5:8000", "http://172.16.4.4", "http://192.168.1.10", "http://[fd12:3456::1]", "http://100.64.0.7", "http://gpu.internal:8000", "http://unknown.test"])
      expect(await guard.refusal(url), url).toBeUndefined();
    expect(await guard.refusal("http://169.254.170.2")).toMatch(/link-local/);
    await guard.close();
  });
});
