// Observability over HTTP: bounded metric series under a path scanner, request ids, health routes.
import { describe, expect, it } from "vitest";
import { useGateway } from "./support/harness.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";

const h = useGateway((url) => coreConfig(url));

async function seriesCount(): Promise<number> {
  const text = await (await fetch(`${h.gw.url}/metrics`)).text();
  return text.split("\n").filter((l) => l.startsWith("sluice_") || l.startsWith("gen_ai_")).length;
}

describe("observability over HTTP", () => {
  it("does not grow the series count when a scanner hits random paths and models", async () => {
    // one of each kind first, so their series exist
    await fetch(`${h.gw.url}/warm-up`);
    await (await chat(h.gw.url, { model: "warm-up", messages: [userMessage("x")] })).text();
    const before = await seriesCount();
    for (let i = 0; i < 40; i++) {
      await (await fetch(`${h.gw.url}/scan-${i}/${Math.random().toString(36).slice(2)}?q=${i}`)).text();
      await (await chat(h.gw.url, { model: `random-model-${i}`, messages: [userMessage("x")] })).text();
    }
    expect(await seriesCount()).toBe(before);
  });

  it("returns a request id on every answer, reusing a sane incoming one", async () => {
    const res = await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const mine = await fetch(`${h.gw.url}/nowhere`, { headers: { "x-request-id": "trace-abc.123" } });
    expect(mine.headers.get("x-request-id")).toBe("trace-abc.123");
    const hostile = await fetch(`${h.gw.url}/nowhere`, { headers: { "x-request-id": "a b\tc" } });
    expect(hostile.headers.get("x-request-id")).not.toBe("a b\tc");
  });

  it("answers /healthz and /readyz", async () => {
    expect(await (await fetch(`${h.gw.url}/healthz`)).json()).toEqual({ status: "ok" });
    const ready = await fetch(`${h.gw.url}/readyz`);
    expect(ready.status).toBe(200);
    await h.gw.store.close();
    expect((await fetch(`${h.gw.url}/readyz`)).status).toBe(503);
  });
});
