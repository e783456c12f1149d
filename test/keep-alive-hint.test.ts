// Every answer tells the client how long the gateway keeps an idle connection (`keep-alive:
// timeout=N`), streams included: a client pooling connections longer than that otherwise sends its
// next request into a connection the gateway is closing and gets a reset (found by the soak).
import { request } from "undici";
import { expect, it } from "vitest";
import { APP_KEY, coreConfig } from "./support/core-config.js";
import { useGateway } from "./support/harness.js";

const h = useGateway((url) => coreConfig(url));

for (const stream of [false, true]) {
  it(`a ${stream ? "streamed" : "whole"} answer carries the keep-alive timeout`, async () => {
    const body = JSON.stringify({ model: "m1", stream, messages: [{ role: "user", content: "hi" }] });
    const res = await request(`${h.gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` }, body });
    await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(res.headers.connection).toBe("keep-alive");
    expect(res.headers["keep-alive"]).toMatch(/^timeout=\d+/);
  });
}
