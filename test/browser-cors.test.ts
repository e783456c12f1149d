// A browser app on another origin calling the gateway with `fetch` (docs/api.md#cors): real headless
// Chromium, a page served by a small server on another loopback port, the gateway's CORS answers.
// With the page's origin allowed, answers, streams and errors reach the script; with it not listed,
// the browser blocks the call after the preflight and the POST never reaches the model.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { APP_KEY, coreConfig } from "./support/core-config.js";

const ANSWER = "Hello from the model";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

let browser: Browser;
let upstream: Upstream;
let pageServer: Server;
let pageOrigin: string;
let allowed: StartedGateway;
let listedOnly: StartedGateway;
let page: Page;
const consoleErrors: string[] = [];

beforeAll(async () => {
  pageServer = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>a browser app</title><p>app</p>");
  });
  await new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", resolve));
  pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;

  upstream = await startUpstream({ text: ANSWER, chunks: 3 });
  allowed = await startGateway(coreConfig(upstream.url, { server: { cors: { origins: [pageOrigin] } } }));
  listedOnly = await startGateway(coreConfig(upstream.url, { server: { cors: { origins: ["https://elsewhere.example"] } } }));

  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
  page = await browser.newPage();
  page.on("console", (msg) => msg.type() === "error" && consoleErrors.push(msg.text()));
  await page.goto(`${pageOrigin}/`);
});

afterAll(async () => {
  await browser?.close();
  await allowed?.close();
  await listedOnly?.close();
  await upstream?.close();
  await new Promise((resolve) => pageServer?.close(resolve));
});

interface CallResult {
  outcome: "answered" | "blocked";
  status?: number;
  text?: string;
  error?: string;
}

/** Runs `fetch` in the page (the page's origin), as a browser app would. */
function callFromPage(gatewayUrl: string, body: Record<string, unknown>, key = APP_KEY): Promise<CallResult> {
  return page.evaluate(
    async ({ url, key, body }) => {
      try {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        });
        // read as a stream, chunk by chunk, as a chat app shows an answer
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let text = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
        return { outcome: "answered" as const, status: res.status, text };
      } catch (err) {
        return { outcome: "blocked" as const, error: String(err) };
      }
    },
    { url: gatewayUrl, key, body },
  );
}

const hello = { model: "m1", messages: [{ role: "user", content: "hi" }] };

describe("a page on another origin", () => {
  it("gets a whole answer with its Authorization header", async () => {
    const result = await callFromPage(allowed.url, hello);
    expect(result).toMatchObject({ outcome: "answered", status: 200 });
    expect(JSON.parse(result.text!).choices[0].message.content).toBe(ANSWER);
  });

  it("reads a streamed answer to its end", async () => {
    const result = await callFromPage(allowed.url, { ...hello, stream: true });
    expect(result).toMatchObject({ outcome: "answered", status: 200 });
    const deltas = result
      .text!.split("\n\n")
      .filter((frame) => frame.startsWith("data: {"))
      .map((frame) => JSON.parse(frame.slice(6)).choices[0]?.delta?.content ?? "");
    expect(deltas.join("")).toBe(ANSWER);
    expect(result.text).toContain("data: [DONE]");
  });

  it("can read an error's status and body", async () => {
    const result = await callFromPage(allowed.url, hello, "sk-not-a-key-0000000000");
    expect(result).toMatchObject({ outcome: "answered", status: 401 });
    expect(JSON.parse(result.text!).error.code).toBe("invalid_api_key");
  });

  it("is blocked by the browser when server.cors.origins does not list it, and the model is never called", async () => {
    const before = upstream.requests.length;
    const errorsBefore = consoleErrors.length;
    const result = await callFromPage(listedOnly.url, hello);
    expect(result).toEqual({ outcome: "blocked", error: "TypeError: Failed to fetch" });
    expect(upstream.requests.length).toBe(before);
    expect(consoleErrors.slice(errorsBefore).join("\n")).toMatch(/blocked by CORS policy/);
  });
});
