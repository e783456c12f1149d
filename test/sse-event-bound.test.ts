// An upstream stream that never ends its event (issue 36, check b; docs/api.md#streams): the relay
// keeps what is pending of an event in pieces, never copying it again per read, and an event past
// 1 MiB fails the stream with an error that says so, the upstream cut there. On the chat relay
// and a dialect's (Messages) alike, over real sockets. Before: the pending bytes were joined again
// (and, holding a CR, decoded and rewritten whole) on every read: 12 MiB of one event, a CR in each
// 64 KiB, took the chat relay 14.7 s (the event loop held up to 5.0 s at once) and the Messages
// relay 10.1 s (3.4 s), all read, and ended with a 502 "not valid" answer; now 0.4 s for both.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";
import { parseSse } from "./support/sse.js";

const MIB = 1024 * 1024;
const TOTAL = 12 * MIB;
const FIRST = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: "Hi" }, finish_reason: null }] })}\n\n`;
const PIECE = Buffer.alloc(64 * 1024, "x");
PIECE[32 * 1024] = 13; // a CR in each piece, a line break of its own

let written: number[] = [];
let upstream: Server;
let gw: StartedGateway;

beforeAll(async () => {
  // one whole event, then one that never ends: a CR in it, then x after x until TOTAL or the gateway hangs up
  upstream = createServer((req, res) => {
    req.resume();
    if (req.method !== "POST") return void res.writeHead(200, { "content-type": "application/json" }).end('{"object":"list","data":[]}');
    let sent = 0;
    let open = true;
    res.on("close", () => ((open = false), written.push(sent)));
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(FIRST);
    res.write('data: {"choices":[{"index":0,"delta":{"content":"\r');
    const more = () => {
      while (open && sent < TOTAL) {
        sent += PIECE.length;
        if (!res.write(PIECE)) return void res.once("drain", more);
      }
      if (open) res.end();
    };
    more();
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  gw = await startGateway(coreConfig(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`));
});
afterAll(async () => {
  await gw?.close();
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

const messages = (body: unknown) =>
  fetch(`${gw.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": APP_KEY }, body: JSON.stringify(body) });

describe("a stream event that never ends", () => {
  it("fails a chat stream past 1 MiB with an error naming the bound, the upstream cut there", async () => {
    written = [];
    const res = await chat(gw.url, { model: "m1", messages: [userMessage("hi")], stream: true });
    const frames = parseSse(await res.text());
    expect(frames[0]!.data).toContain('"content":"Hi"');
    expect(JSON.parse(frames.at(-1)!.data).error).toMatchObject({ code: "upstream_error", message: "The model server for m1 sent a stream event larger than 1048576 bytes." });
    await expect.poll(() => written.length).toBe(1);
    expect(written[0]).toBeLessThan(TOTAL / 2);
  });

  it("fails a Messages stream past 1 MiB the same way", async () => {
    written = [];
    const res = await messages({ model: "m1", max_tokens: 100, messages: [userMessage("hi")], stream: true });
    const text = await res.text();
    expect(text).toContain('"text":"Hi"');
    const error = JSON.parse(parseSse(text).at(-1)!.data) as { type: string; error: { message: string } };
    expect(error).toMatchObject({ type: "error", error: { message: "The model server for m1 sent a stream event larger than 1048576 bytes." } });
    await expect.poll(() => written.length).toBe(1);
    expect(written[0]).toBeLessThan(TOTAL / 2);
  });
});
