// Upstream error events mid-stream (issue "Hardening", first row): the client gets an error event,
// the request is billed for what was relayed, and the process and the other streams carry on.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { parseSse } from "./support/sse.js";

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

/** Each request's last user message picks the misbehaviour; the connection is then left open,
 *  but for garbage, which passes unparsed and is caught when the stream ends without [DONE]. */
const PLAYS: Record<string, string> = {
  error: chunk("partial answer ") + 'data: {"error":{"message":"CUDA out of memory","type":"server_error"}}\n\n',
  badUsage: chunk("partial answer ") + 'data: {"choices":[],"usage":{"prompt_tokens": oops}}\n\n',
  garbage: chunk("partial answer ") + "data: \u0000\u0001{{{not json\n\n",
};

let upstream: Server;
let gw: StartedGateway;
beforeAll(async () => {
  upstream = createServer((req, res) => {
    if (req.method === "GET") return void res.end('{"object":"list","data":[]}'); // health checks
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const messages = (JSON.parse(raw) as { messages: Array<{ content: string }> }).messages;
      const play = PLAYS[messages.at(-1)!.content] ?? chunk("fine") + "data: [DONE]\n\n";
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(play);
      if (!PLAYS[messages.at(-1)!.content] || messages.at(-1)!.content === "garbage") res.end();
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  gw = await startGateway(coreConfig(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`));
});
afterAll(async () => {
  await gw?.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

describe("an upstream that breaks mid-stream", () => {
  it.each(Object.keys(PLAYS))("ends the client's stream with an error event on '%s' and keeps serving", async (play) => {
    const res = await chat(gw.url, { messages: [userMessage(play)], stream: true });
    expect(res.status).toBe(200);
    const frames = parseSse(await res.text());
    expect(frames[0]!.data).toContain("partial answer");
    const last = JSON.parse(frames.at(-1)!.data);
    expect(last.error.code).toMatch(/^upstream_/);
    expect(JSON.stringify(last)).not.toContain("CUDA");
    // the process is alive and other requests are answered
    const ok = await chat(gw.url, { messages: [userMessage("hello")], stream: true });
    expect(parseSse(await ok.text()).at(-1)!.data).toBe("[DONE]");
  });

  it("keeps other streams going while one breaks", async () => {
    const results = await Promise.all(
      ["error", "hello", "badUsage", "hello", "garbage", "hello"].map(async (play) => {
        const res = await chat(gw.url, { messages: [userMessage(play)], stream: true });
        return parseSse(await res.text()).at(-1)!.data;
      }),
    );
    expect(results.filter((d) => d === "[DONE]")).toHaveLength(3);
    expect(results.filter((d) => d.includes('"error"'))).toHaveLength(3);
  });
});
