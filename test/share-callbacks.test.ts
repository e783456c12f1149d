// The operator identity callbacks against a real operator server on 127.0.0.1.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ShareLinkConfig } from "../src/config/schema.js";
import { GatewayError } from "../src/http/errors.js";
import { silentObserver, type Observer } from "../src/observability/observer.js";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createShareAuth, tokenDigest, type ShareAuth, type ShareAuthOptions } from "../src/share/callbacks.js";
import { createSqliteStore } from "../src/store/sqlite.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";

let op: OperatorServer;
let auths: ShareAuth[];
let reports: string[];

const observer: Observer = { ...silentObserver, shareCallback: (kind, outcome) => void reports.push(`${kind}:${outcome}`) };
const count = (report: string) => reports.filter((r) => r === report).length;

function makeAuth(opts: Partial<ShareAuthOptions> = {}): ShareAuth {
  const auth = createShareAuth({ observer, finishBackoffMs: 5, ...opts });
  auths.push(auth);
  return auth;
}

function link(over: Partial<ShareLinkConfig> = {}): ShareLinkConfig {
  return {
    shareId: "support-public",
    appId: "support",
    authHost: op.url,
    qpm: 0,
    maxUsagePoints: -1,
    tpm: 0,
    periodPoints: -1,
    period: "day",
    expiresAt: null,
    responseDetail: false,
    callbackTimeoutMs: 2000,
    apiQpm: 0,
    ...over,
  };
}

/** The rejection as a GatewayError; its message never shows the token or the operator's address. */
async function failure(promise: Promise<unknown>, token: string): Promise<GatewayError> {
  const err = await promise.then(
    () => expect.fail("expected a rejection"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayError);
  const { message } = err as GatewayError;
  expect(message).not.toContain(token);
  expect(message).not.toContain("127.0.0.1");
  expect(message).not.toContain("internal-detail");
  return err as GatewayError;
}

beforeEach(async () => {
  op = await startOperatorServer();
  auths = [];
  reports = [];
});

afterEach(async () => {
  await Promise.all(auths.map((a) => a.close()));
  await op.close();
});

describe("init and start callbacks", () => {
  it("posts {token} to /shareAuth/init without an Authorization header and returns data.uid", async () => {
    const uid = await makeAuth().init(link(), "tok-1");
    expect(uid).toBe("u-tok-1");
    expect(op.calls).toHaveLength(1);
    expect(op.calls[0]).toMatchObject({ method: "POST", path: "/shareAuth/init", body: { token: "tok-1" } });
    expect(op.calls[0]?.headers.authorization).toBeUndefined();
    expect(op.violations).toEqual([]);
    expect(reports).toEqual(["init:success"]);
  });

  it("posts {token, question} to /shareAuth/start and returns data.uid", async () => {
    const uid = await makeAuth().start(link(), "tok-2", "How do I reset my password?");
    expect(uid).toBe("u-tok-2");
    expect(op.calls[0]).toMatchObject({ path: "/shareAuth/start", body: { token: "tok-2", question: "How do I reset my password?" } });
    expect(op.violations).toEqual([]);
    expect(reports).toEqual(["start:success"]);
  });

  it("uses the token's digest as uid when start's reply has no data.uid and no init gave one: never the token itself (before: the token)", async () => {
    op.setMode("tok-3", { kind: "success", uid: null });
    const uid = await makeAuth().start(link(), "tok-3", "hi");
    expect(uid).toBe(tokenDigest("tok-3"));
    expect(uid).not.toContain("tok-3");
  });

  it("finds the uid an init on another instance gave (kept in the store under the token's digest, never the token)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-uids-"));
    const path = join(dir, "uids.db");
    const store = createSqliteStore(path);
    try {
      // two instances: two processes' caches, one store
      expect(await makeAuth({ uids: store }).init(link(), "tok-secret-3c")).toBe("u-tok-secret-3c");
      op.setMode("tok-secret-3c", { kind: "success", uid: null });
      // before: the second instance knew nothing of the first's init and answered the token
      expect(await makeAuth({ uids: store }).start(link(), "tok-secret-3c", "hi")).toBe("u-tok-secret-3c");
      await store.close();
      const bytes = readFileSync(path).toString("latin1") + (existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`).toString("latin1") : "");
      expect(bytes).toContain("u-tok-secret-3c");
      expect(bytes.replaceAll("u-tok-secret-3c", "")).not.toContain("tok-secret-3c");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("uses the uid init gave for the token when start's reply has no data.uid, so the user's chats are found again", async () => {
    const auth = makeAuth();
    expect(await auth.init(link(), "tok-3b")).toBe("u-tok-3b");
    op.setMode("tok-3b", { kind: "success", uid: null });
    expect(await auth.start(link(), "tok-3b", "hi")).toBe("u-tok-3b");
  });

  it("joins an authHost that carries a path and a trailing slash without doubling slashes", async () => {
    const prefixed = await startOperatorServer({ prefix: "/ops/auth" });
    try {
      await makeAuth().init(link({ authHost: `${prefixed.url}/` }), "tok-4");
      expect(prefixed.calls.map((c) => c.path)).toEqual(["/shareAuth/init"]);
      expect(prefixed.violations).toEqual([]);
    } finally {
      await prefixed.close();
    }
  });

  it("shows the operator's message when success is not true", async () => {
    op.setMode("tok-5", { kind: "reject", message: "Your balance is empty" });
    const err = await failure(makeAuth().init(link(), "tok-5"), "tok-5");
    expect([err.status, err.code, err.message]).toEqual([403, "share_auth_rejected", "Your balance is empty"]);
    expect(reports).toEqual(["init:rejected"]);
  });

  it("shows msg when the operator sends msg instead of message", async () => {
    op.setMode("tok-6", { kind: "reject", msg: "Content not compliant" });
    const err = await failure(makeAuth().start(link(), "tok-6", "something"), "tok-6");
    expect([err.status, err.code, err.message]).toEqual([403, "share_auth_rejected", "Content not compliant"]);
  });

  it("shows a generic identity error when the operator gives no text", async () => {
    op.setMode("tok-7", { kind: "reject" });
    const err = await failure(makeAuth().init(link(), "tok-7"), "tok-7");
    expect([err.status, err.code, err.message]).toEqual([403, "share_auth_rejected", "Identity verification failed"]);
  });

  it("refuses a uid with a forbidden character", async () => {
    op.setMode("tok-8", { kind: "bad-uid" });
    const err = await failure(makeAuth().init(link(), "tok-8"), "tok-8");
    expect(err.code).toBe("share_auth_invalid_uid");
    expect(err.status).toBe(502);
    expect(reports).toEqual(["init:error"]);
  });

  it("answers 502 when the operator does not answer in time", async () => {
    op.setMode("tok-9", { kind: "slow" });
    const started = Date.now();
    const err = await failure(makeAuth().start(link({ callbackTimeoutMs: 150 }), "tok-9", "hi"), "tok-9");
    expect([err.status, err.code]).toEqual([502, "share_auth_unavailable"]);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(reports).toEqual(["start:error"]);
  });

  it("answers 502 when the operator's reply is not JSON", async () => {
    op.setMode("tok-10", { kind: "not-json" });
    const err = await failure(makeAuth().init(link(), "tok-10"), "tok-10");
    expect(err.code).toBe("share_auth_unavailable");
  });

  it("answers 502 when the operator's server is down", async () => {
    const host = op.url;
    await op.close();
    const err = await failure(makeAuth().init(link({ authHost: host }), "tok-11"), "tok-11");
    expect([err.status, err.code]).toEqual([502, "share_auth_unavailable"]);
  });

  it("caches a successful init per link and token", async () => {
    const auth = makeAuth();
    await auth.init(link(), "tok-12");
    await auth.init(link(), "tok-12");
    expect(op.callsTo("/shareAuth/init")).toHaveLength(1);
    await auth.init(link({ shareId: "other-link" }), "tok-12");
    expect(op.callsTo("/shareAuth/init")).toHaveLength(2);
  });

  it("remembers a refused init for failedInitTtlMs: a repeat is answered the same without asking the operator", async () => {
    let clock = 1_000_000;
    const auth = makeAuth({ now: () => clock, failedInitTtlMs: 10_000 });
    op.setMode("tok-13", { kind: "reject", message: "not yet" });
    await expect(auth.init(link(), "tok-13")).rejects.toThrow("not yet");
    op.setMode("tok-13", { kind: "success" });
    clock += 9_999;
    const again = await failure(auth.init(link(), "tok-13"), "tok-13");
    expect([again.status, again.code, again.message]).toEqual([403, "share_auth_rejected", "not yet"]);
    expect(op.callsTo("/shareAuth/init")).toHaveLength(1);
    expect(reports).toEqual(["init:rejected"]); // a remembered answer is no callback
    // another link is another question; past the time, the operator is asked again
    expect(await auth.init(link({ shareId: "other-link" }), "tok-13")).toBe("u-tok-13");
    clock += 2;
    expect(await auth.init(link(), "tok-13")).toBe("u-tok-13");
    expect(op.callsTo("/shareAuth/init")).toHaveLength(3);
  });

  it("remembers an init the operator did not answer, or answered with a bad uid", async () => {
    const auth = makeAuth();
    op.setMode("tok-14", { kind: "slow" });
    const slow = link({ callbackTimeoutMs: 100 });
    expect((await failure(auth.init(slow, "tok-14"), "tok-14")).code).toBe("share_auth_unavailable");
    expect((await failure(auth.init(slow, "tok-14"), "tok-14")).code).toBe("share_auth_unavailable");
    op.setMode("tok-15", { kind: "bad-uid" });
    expect((await failure(auth.init(link(), "tok-15"), "tok-15")).code).toBe("share_auth_invalid_uid");
    expect((await failure(auth.init(link(), "tok-15"), "tok-15")).code).toBe("share_auth_invalid_uid");
    expect(op.callsTo("/shareAuth/init")).toHaveLength(2);
  });

  it("ends a call the operator never answers at its timeout, while memory is collected (before: it waited for ever)", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const auth = makeAuth();
    op.setMode("tok-gc", { kind: "slow" });
    const collecting = setInterval(gc, 5);
    try {
      expect((await failure(auth.init(link({ callbackTimeoutMs: 100 }), "tok-gc"), "tok-gc")).code).toBe("share_auth_unavailable");
    } finally {
      clearInterval(collecting);
    }
  }, 5000);

  it("asks the operator once for the same token sent many times at once", async () => {
    const auth = makeAuth();
    op.setMode("tok-16", { kind: "reject", message: "who?" });
    const answers = await Promise.allSettled(Array.from({ length: 10 }, () => auth.init(link(), "tok-16")));
    expect(answers.every((a) => a.status === "rejected" && (a.reason as GatewayError).message === "who?")).toBe(true);
    expect(await Promise.all(Array.from({ length: 10 }, () => auth.init(link(), "tok-17")))).toEqual(Array(10).fill("u-tok-17"));
    expect(op.callsTo("/shareAuth/init")).toHaveLength(2);
  });

  it("without authHost returns the localId as uid, and refuses a malformed one", async () => {
    const auth = makeAuth();
    const local = link({ authHost: undefined });
    expect(await auth.init(local, "shareChat-1700000000000-abc")).toBe("shareChat-1700000000000-abc");
    expect(await auth.start(local, "shareChat-1700000000000-abc", "hi")).toBe("shareChat-1700000000000-abc");
    const err = await failure(auth.init(local, "a/b"), "a/b");
    expect([err.status, err.code]).toEqual([400, "invalid_uid"]);
    await expect(auth.init(local, "x".repeat(256))).rejects.toMatchObject({ code: "invalid_uid" });
    auth.finish(local, "shareChat-1", "Support bot", []);
    await auth.drain();
    expect(op.calls).toEqual([]);
    expect(reports).toEqual([]);
  });
});

describe("finish callback", () => {
  const report = [{ moduleType: "chatNode", moduleName: "AI Chat", tokens: 12, totalPoints: 0.5 }];

  it("posts {token, appName, responseData} in the background", async () => {
    const auth = makeAuth();
    const returned = auth.finish(link(), "tok-20", "Support bot", report);
    expect(returned).toBeUndefined();
    expect(op.calls).toHaveLength(0); // nothing was awaited
    const [call] = await op.waitForFinish(1);
    expect(call).toMatchObject({ path: "/shareAuth/finish", body: { token: "tok-20", appName: "Support bot", responseData: report } });
    expect(call?.headers.authorization).toBeUndefined();
    await auth.drain();
    expect(op.violations).toEqual([]);
    expect(reports).toEqual(["finish:success"]);
  });

  it("retries a failed report with backoff and counts each retry", async () => {
    op.failFinish(2);
    const auth = makeAuth({ finishRetries: 3 });
    auth.finish(link(), "tok-21", "Support bot", report);
    await op.waitForFinish(3);
    await auth.drain();
    expect(reports).toEqual(["finish:retry", "finish:retry", "finish:success"]);
  });

  it("gives up after the configured retries and counts an error", async () => {
    op.failFinish(100);
    const auth = makeAuth({ finishRetries: 2 });
    auth.finish(link(), "tok-22", "Support bot", report);
    await auth.drain();
    expect(op.callsTo("/shareAuth/finish")).toHaveLength(3);
    expect(reports).toEqual(["finish:retry", "finish:retry", "finish:error"]);
  });

  it("holds at most finishQueueMax reports and drops the rest", async () => {
    op.slowFinish(true);
    const auth = makeAuth({ finishQueueMax: 2 });
    for (let i = 0; i < 5; i++) auth.finish(link(), `tok-23-${i}`, "Support bot", report);
    expect(count("finish:dropped")).toBe(3);
    await op.waitForFinish(2);
    op.slowFinish(false);
    await auth.drain();
    expect(count("finish:success")).toBe(2);
    expect(op.callsTo("/shareAuth/finish")).toHaveLength(2);
  });

  it("close aborts a report in flight, drops queued ones and refuses new ones", async () => {
    op.slowFinish(true);
    const auth = makeAuth({ finishRetries: 0 });
    for (let i = 0; i < 10; i++) auth.finish(link({ callbackTimeoutMs: 60_000 }), `tok-24-${i}`, "Support bot", report);
    await op.waitForFinish(8); // eight are sent at once, two wait
    await auth.close();
    auth.finish(link(), "tok-24-late", "Support bot", report);
    expect(count("finish:error")).toBe(8);
    expect(count("finish:dropped")).toBe(3);
  });
});

describe("redirects", () => {
  /** A server that records every request and answers as `answer` says. */
  async function recorder(answer: (res: ServerResponse) => void): Promise<{ url: string; paths: string[]; close(): Promise<void> }> {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      req.resume();
      req.on("end", () => answer(res));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      paths,
      close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
    };
  }

  it("are never followed: a 3xx from the operator is an identity failure, and its target receives nothing", async () => {
    const json = (res: ServerResponse) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ success: true, data: { uid: "elsewhere" } }));
    const target = await recorder(json);
    const redirector = await recorder((res) => res.writeHead(302, { location: `${target.url}/shareAuth/init` }).end());
    const permanent = await recorder((res) => res.writeHead(308, { location: `${target.url}/collect` }).end());
    try {
      const auth = makeAuth({ finishRetries: 1 });
      const err = await failure(auth.init(link({ authHost: redirector.url }), "tok-30"), "tok-30");
      expect([err.status, err.code]).toEqual([502, "share_auth_unavailable"]);
      expect((await failure(auth.start(link({ authHost: permanent.url }), "tok-31", "hi"), "tok-31")).code).toBe("share_auth_unavailable");
      auth.finish(link({ authHost: permanent.url }), "tok-32", "Support bot", []);
      await auth.drain();
      expect(redirector.paths).toEqual(["POST /shareAuth/init"]);
      expect(permanent.paths).toEqual(["POST /shareAuth/start", "POST /shareAuth/finish"]);
      expect(target.paths).toEqual([]);
      expect(reports).toEqual(["init:error", "start:error", "finish:error"]);
    } finally {
      await Promise.all([target.close(), redirector.close(), permanent.close()]);
    }
  });
});
