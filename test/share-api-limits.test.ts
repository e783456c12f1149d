// The share-link API answers anonymous callers, and its init asks the operator's server about a
// token: without limits, made-up tokens sent to the gateway make it a token oracle that speaks from
// the gateway's address. A real gateway and a real operator server on 127.0.0.1: calls are limited
// per link (`shareLinks[].apiQpm`) and per client address (`server.shareApiQpm`, the address taken
// from X-Forwarded-For only as far as `server.trustProxy` says), refused with 429
// rate_limit_exceeded and Retry-After; a failed init is remembered briefly, so repeating a token
// does not ask the operator again.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { H3 } from "h3";
import { toNodeHandler } from "h3/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { clientAddress } from "../src/http/client-address.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { coreConfig } from "./support/core-config.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";

let op: OperatorServer;
const started: StartedGateway[] = [];
beforeAll(async () => {
  op = await startOperatorServer();
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close()));
  op.calls.length = 0;
});
afterAll(() => op.close());

async function gateway(server: Record<string, unknown> = {}, link: Record<string, unknown> = {}): Promise<StartedGateway> {
  const gw = await startGateway(
    coreConfig("http://127.0.0.1:9", {
      server,
      shareLinks: [
        { shareId: "verified", appId: "a1", authHost: op.url, ...link },
        { shareId: "open", appId: "a1", ...link },
        { shareId: "other", appId: "a1", authHost: op.url },
      ],
    }),
  );
  started.push(gw);
  return gw;
}

interface Answer {
  status: number;
  code?: string;
  retryAfter: string | null;
}
async function call(gw: StartedGateway, path: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${gw.url}/api/share/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: json.error?.code, retryAfter: res.headers.get("retry-after") };
}
const init = (gw: StartedGateway, shareId: string, token: string, headers?: Record<string, string>) => call(gw, "init", { shareId, outLinkUid: token }, headers);
const statuses = (answers: Answer[]) => answers.map((a) => `${a.status}${a.code ? ` ${a.code}` : ""}`);
const refused = (a: Answer) => a.status === 429 && a.code === "rate_limit_exceeded" && Number(a.retryAfter) >= 1 && Number(a.retryAfter) <= 60;

describe("failed inits", () => {
  it("are remembered: one made-up token sent 20 times asks the operator once", async () => {
    const gw = await gateway();
    op.setMode("made-up-1", { kind: "reject", message: "unknown token" });
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await init(gw, "verified", "made-up-1"));
    expect(new Set(statuses(answers))).toEqual(new Set(["403 share_auth_rejected"]));
    expect(op.callsTo("/shareAuth/init")).toHaveLength(1);
    // another link is another question
    expect((await init(gw, "other", "made-up-1")).status).toBe(403);
    expect(op.callsTo("/shareAuth/init")).toHaveLength(2);
  });
});

describe("per client address", () => {
  it("20 made-up tokens from one address: server.shareApiQpm of them reach the operator, the rest get 429 with Retry-After", async () => {
    const gw = await gateway({ shareApiQpm: 5 });
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) {
      op.setMode(`guess-${i}`, { kind: "reject" });
      answers.push(await init(gw, "verified", `guess-${i}`));
    }
    expect(op.callsTo("/shareAuth/init")).toHaveLength(5);
    expect(answers.slice(0, 5).every((a) => a.status === 403)).toBe(true);
    expect(answers.slice(5).every(refused)).toBe(true);
    // every share API call counts, on every link: the address is done for this minute
    expect(refused(await call(gw, "chats", { shareId: "open", outLinkUid: "local-1" }))).toBe(true);
    expect(refused(await call(gw, "chat", { shareId: "other", outLinkUid: "local-1", chatId: "c1" }))).toBe(true);
  });

  it("takes the socket's address when no proxy is trusted: a made-up X-Forwarded-For opens no new window", async () => {
    const gw = await gateway({ shareApiQpm: 2 });
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push(await init(gw, "open", "local-1", { "x-forwarded-for": `198.51.100.${i}` }));
    expect(statuses(answers).slice(0, 2)).toEqual(["200", "200"]);
    expect(answers.slice(2).every(refused)).toBe(true);
  });

  it("behind server.trustProxy proxies, takes the address the nearest proxy appended, not what the client wrote", async () => {
    const gw = await gateway({ shareApiQpm: 2, trustProxy: 1 });
    const via = (client: string, forged?: string) => ({ "x-forwarded-for": forged ? `${forged}, ${client}` : client });
    expect((await init(gw, "open", "local-1", via("203.0.113.7"))).status).toBe(200);
    // the client's own entry in front of the one the proxy appended changes nothing
    expect((await init(gw, "open", "local-1", via("203.0.113.7", "192.0.2.1"))).status).toBe(200);
    expect(refused(await init(gw, "open", "local-1", via("203.0.113.7", "192.0.2.2")))).toBe(true);
    // another client behind the same proxy has its own window
    expect((await init(gw, "open", "local-1", via("203.0.113.8"))).status).toBe(200);
    // an IPv6 host counts by its /64: it cannot pick a fresh address per call
    expect((await init(gw, "open", "local-1", via("2001:db8:1:2::1"))).status).toBe(200);
    expect((await init(gw, "open", "local-1", via("2001:db8:1:2:ffff::9"))).status).toBe(200);
    expect(refused(await init(gw, "open", "local-1", via("2001:0db8:0001:0002:0:0:0:abcd")))).toBe(true);
    expect((await init(gw, "open", "local-1", via("2001:db8:1:3::1"))).status).toBe(200);
  });
});

describe("per link", () => {
  it("counts every address together against shareLinks[].apiQpm; other links keep theirs", async () => {
    const gw = await gateway({ trustProxy: 1 }, { apiQpm: 3 });
    const from = (i: number) => ({ "x-forwarded-for": `203.0.113.${i}` });
    const answers: Answer[] = [];
    for (let i = 0; i < 5; i++) answers.push(await init(gw, "open", `local-${i}`, from(i)));
    expect(statuses(answers).slice(0, 3)).toEqual(["200", "200", "200"]);
    expect(answers.slice(3).every(refused)).toBe(true);
    expect((await init(gw, "other", "tok-1", from(9))).status).toBe(200);
  });

  it("has defaults that a page's own calls stay far below: 60 a minute per address, 600 per link", async () => {
    const gw = await gateway();
    expect(gw.config.server).toMatchObject({ shareApiQpm: 60, trustProxy: 0 });
    expect(gw.config.shareLinks[0]).toMatchObject({ apiQpm: 600 });
    const answers: Answer[] = [];
    for (let i = 0; i < 61; i++) answers.push(await call(gw, "chats", { shareId: "open", outLinkUid: "local-1" }));
    expect(answers.slice(0, 60).every((a) => a.status === 200)).toBe(true);
    expect(refused(answers[60]!)).toBe(true);
  });
});

describe("the client address", () => {
  it("is the socket's peer, or the X-Forwarded-For entry server.trustProxy hops away", async () => {
    const app = new H3().get("/", (event) => clientAddress(event, Number(event.url.searchParams.get("hops"))));
    const server = createServer(toNodeHandler(app));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const ask = async (hops: number, forwarded?: string) =>
      (await fetch(`${base}/?hops=${hops}`, { headers: forwarded ? { "x-forwarded-for": forwarded } : {} })).text();
    try {
      expect(await ask(0)).toBe("127.0.0.1");
      expect(await ask(0, "203.0.113.9")).toBe("127.0.0.1");
      expect(await ask(1)).toBe("127.0.0.1"); // no proxy in between after all
      expect(await ask(1, "192.0.2.1, 203.0.113.9")).toBe("203.0.113.9");
      expect(await ask(2, "192.0.2.1, 203.0.113.9")).toBe("192.0.2.1");
      expect(await ask(5, "192.0.2.1, 203.0.113.9")).toBe("192.0.2.1");
      expect(await ask(1, "::ffff:203.0.113.9")).toBe("203.0.113.9");
      expect(await ask(1, "2001:DB8:a::1")).toBe("2001:db8:a:0::/64");
      expect(await ask(1, "fe80::1%eth0")).toBe("fe80:0:0:0::/64");
      // what a trusted proxy would never write is not an address: the peer's is taken
      expect(await ask(1, "not-an-address")).toBe("127.0.0.1");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
