// HTTP-layer refusals over raw sockets (docs/configuration.md#server, docs/api.md#errors): a header or body
// trickle gets 408 at its bound, oversized headers 431, broken HTTP 400, an oversized body 413 — each with
// the OpenAI error body and a clean close, never an empty answer or a reset.
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { useGateway } from "./support/harness.js";
import { APP_KEY, coreConfig } from "./support/core-config.js";

const h = useGateway((url) => coreConfig(url, { server: { headersTimeoutMs: 500, bodyTimeoutMs: 700, bodyLimitBytes: 4096 } }));

interface Exchange {
  status: number;
  headers: string;
  body: string;
  /** ms from the first byte sent to the connection's close */
  closedAfterMs: number;
}

/** Sends `head` (and keeps trickling `trickle` one byte every 200 ms until the server answers); reads until close. */
function exchange(head: string, trickle = ""): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(h.gw.url);
    const socket: Socket = connect(Number(port), "127.0.0.1");
    const started = performance.now();
    let received = "";
    let timer: NodeJS.Timeout | undefined;
    socket.on("connect", () => {
      socket.write(head);
      let i = 0;
      if (trickle) timer = setInterval(() => (i < trickle.length ? socket.write(trickle[i++]!) : clearInterval(timer)), 200);
    });
    socket.on("data", (d) => (received += d.toString()));
    socket.on("error", (err) => {
      clearInterval(timer);
      reject(err);
    });
    socket.on("close", () => {
      clearInterval(timer);
      const [headers = "", body = ""] = received.split("\r\n\r\n");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1]), headers, body, closedAfterMs: performance.now() - started });
    });
  });
}

/** Sends `head`, then each of `parts` 50 ms apart whatever the server does meanwhile; reads until close. */
function exchangeInPieces(head: string, parts: readonly string[]): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(h.gw.url);
    const socket: Socket = connect(Number(port), "127.0.0.1");
    const started = performance.now();
    let received = "";
    socket.on("connect", async () => {
      socket.write(head);
      for (const part of parts) {
        await new Promise((r) => setTimeout(r, 50)); // a client on a slow uplink
        if (!socket.destroyed) socket.write(part);
      }
    });
    socket.on("data", (d) => (received += d.toString()));
    socket.on("error", reject);
    socket.on("close", () => {
      const [headers = "", body = ""] = received.split("\r\n\r\n");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1]), headers, body, closedAfterMs: performance.now() - started });
    });
  });
}

function expectOpenAIError(x: Exchange, status: number, code: string): void {
  expect(x.status).toBe(status);
  expect(x.headers.toLowerCase()).toContain("connection: close");
  // a chunked answer frames its body in size lines: the JSON is what lies between the braces
  const body = JSON.parse(x.body.slice(x.body.indexOf("{"), x.body.lastIndexOf("}") + 1));
  expect(body.error).toMatchObject({ code, type: "invalid_request_error", param: null });
  expect(body.error.message.length).toBeGreaterThan(0);
}

const chatHead = (length: number) =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${APP_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe("HTTP-layer refusals", () => {
  it("answers a header trickle with 408 and an OpenAI body at headersTimeoutMs", async () => {
    const x = await exchange("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n", "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaa");
    expectOpenAIError(x, 408, "request_timeout");
    expect(x.closedAfterMs).toBeLessThan(3_000);
  });

  it("answers a body trickle with 408 and an OpenAI body after headers + bodyTimeoutMs", async () => {
    const x = await exchange(chatHead(200), '{"messages":[{"role":"user","content":"' + "a".repeat(100));
    expectOpenAIError(x, 408, "request_timeout");
    expect(x.closedAfterMs).toBeLessThan(3_500);
  });

  it("answers 431 with an OpenAI body to headers over Node's limit", async () => {
    const x = await exchange(`GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${"b".repeat(20 * 1024)}\r\n\r\n`);
    expectOpenAIError(x, 431, "request_header_fields_too_large");
  });

  it("answers 400 with an OpenAI body to a malformed request line", async () => {
    const x = await exchange("THIS IS NOT HTTP\r\n\r\n");
    expectOpenAIError(x, 400, "bad_http_request");
  });

  it("answers 413 with an OpenAI body to a declared body over bodyLimitBytes, and closes cleanly", async () => {
    const body = JSON.stringify({ messages: [{ role: "user", content: "z".repeat(8000) }] });
    const x = await exchange(chatHead(Buffer.byteLength(body)) + body);
    expectOpenAIError(x, 413, "request_too_large");
    expect(x.closedAfterMs).toBeLessThan(2_000);
  });

  it("answers 413 to a client still sending its oversized body, without a reset that would lose the answer", async () => {
    // a declared body and a chunked one, each arriving in pieces after the refusal is written
    const body = JSON.stringify({ messages: [{ role: "user", content: "z".repeat(6000) }] });
    const pieces = [body.slice(0, 2000), body.slice(2000, 4000), body.slice(4000)];
    const chunkedHead = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${APP_KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunked = pieces.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`);
    chunked[chunked.length - 1] += "0\r\n\r\n";
    for (const [head, parts] of [[chatHead(Buffer.byteLength(body)), pieces], [chunkedHead, chunked]] as const) {
      const x = await exchangeInPieces(head, parts);
      expectOpenAIError(x, 413, "request_too_large");
    }
  });

  it("still answers a normal request afterwards", async () => {
    const res = await fetch(`${h.gw.url}/v1/models`, { headers: { authorization: `Bearer ${APP_KEY}` } });
    expect(res.status).toBe(200);
  });
});
