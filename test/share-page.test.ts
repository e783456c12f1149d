// The share-link chat window in a real headless Chromium, against the whole gateway, a real
// upstream model and a real operator server.
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ANSWER = "Sluice is a gateway. It streams answers. Piece by piece.";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

let browser: Browser;
let upstream: Upstream;
let op: OperatorServer;
let gw: StartedGateway;
let context: BrowserContext;

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
});

beforeEach(async () => {
  // a pause between chunks so the test can see a partly streamed answer
  upstream = await startUpstream({ text: ANSWER, chunks: 4, chunkDelayMs: 150 });
  op = await startOperatorServer();
  gw = await startGateway({
    channels: [{ name: "local", baseUrl: upstream.url, key: "channel-key-1", models: ["chatglm2"] }],
    llmModels: [{ model: "chatglm2", name: "ChatGLM2" }],
    apps: [{ id: "support", name: "Support bot", model: "chatglm2" }],
    shareLinks: [
      { shareId: "verified", appId: "support", authHost: op.url },
      { shareId: "open", appId: "support" },
    ],
  });
  context = await browser.newContext();
});

afterEach(async () => {
  await context?.close();
  await gw?.close();
  await op?.close();
  await upstream?.close();
});

let pageErrors: string[];

/** Opens the window and waits until init has answered; records script errors and CSP refusals. */
async function openChat(query: string, viewport?: { width: number; height: number }): Promise<Page> {
  const page = await context.newPage();
  pageErrors = [];
  page.on("pageerror", (err) => pageErrors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) pageErrors.push(msg.text());
  });
  if (viewport) await page.setViewportSize(viewport);
  await page.goto(`${gw.url}/chat/share?${query}`);
  await page.locator("#app-name", { hasText: "Support bot" }).or(page.locator("#error:not([hidden])")).first().waitFor();
  return page;
}


async function send(page: Page, text: string) {
  await page.fill("#input", text);
  await page.click("#send");
}

describe("share-link chat window", () => {
  it("streams an answer, then lists the chat again after a reload", async () => {
    const page = await openChat("shareId=verified&authToken=tok-page");
    expect(await page.locator("#chat-list .chat-item").count()).toBe(0);
    await send(page, "What is Sluice?");

    // part of the answer is on screen before the whole of it
    await page.waitForFunction(
      (full) => {
        const text = document.querySelector(".msg.assistant")?.textContent ?? "";
        return text.length > 0 && text !== full;
      },
      ANSWER,
    );
    await page.waitForFunction((full) => document.querySelector(".msg.assistant")?.textContent === full, ANSWER);
    expect(await page.locator(".msg.user").textContent()).toBe("What is Sluice?");
    await page.locator("#chat-list .chat-item").first().waitFor();
    expect(await page.locator("#error").isHidden()).toBe(true);

    await page.reload();
    const item = page.locator("#chat-list .chat-item", { hasText: "What is Sluice?" });
    await item.waitFor();
    await item.click();
    await page.locator(".msg.assistant", { hasText: ANSWER }).waitFor();
    expect(await page.locator("#messages .msg").count()).toBe(2);

    const [finish] = await op.waitForFinish(1);
    expect(op.callsTo("/shareAuth/start").map((c) => c.body)).toEqual([{ token: "tok-page", question: "What is Sluice?" }]);
    expect(finish?.body).toMatchObject({ token: "tok-page", appName: "Support bot" });
    expect(op.violations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("shows an error when the answer breaks off mid-stream", async () => {
    upstream.behave({ cutAfterChunks: 1 });
    const page = await openChat("shareId=open");
    await send(page, "Tell me everything");
    await page.locator("#error:not([hidden])").waitFor();
    expect(await page.locator("#error").textContent()).not.toBe("");
    expect(await page.locator("#send").isEnabled()).toBe(true);
  });

  it("shows the operator's text when it refuses the token", async () => {
    op.setMode("tok-denied", { kind: "reject", message: "Your subscription has ended" });
    const page = await openChat("shareId=verified&authToken=tok-denied");
    const banner = page.locator('#error[role="alert"]');
    await banner.waitFor();
    expect(await banner.textContent()).toBe("Your subscription has ended");
  });

  it("shows the operator's content notice and gives the question back", async () => {
    op.blockWord("forbidden", "Content not compliant");
    const page = await openChat("shareId=verified&authToken=tok-content");
    await send(page, "a forbidden question");
    await page.locator("#error", { hasText: "Content not compliant" }).waitFor();
    expect(await page.inputValue("#input")).toBe("a forbidden question");
    expect(await page.locator(".msg").count()).toBe(0);
    expect(upstream.requests).toHaveLength(0);
  });

  it("without authHost keeps a localId per link and finds the chat again", async () => {
    const page = await openChat("shareId=open");
    await send(page, "Hello without login");
    await page.locator(".msg.assistant", { hasText: ANSWER }).waitFor();
    await page.locator("#chat-list .chat-item").first().waitFor();
    const localId = await page.evaluate(() => localStorage.getItem("sluice-share-localId:open"));
    expect(localId).toMatch(/^shareChat-\d+-[0-9a-f]+$/);

    await page.reload();
    await page.locator("#chat-list .chat-item", { hasText: "Hello without login" }).waitFor();
    expect(await page.evaluate(() => localStorage.getItem("sluice-share-localId:open"))).toBe(localId);
  });

  it("fits a phone screen without horizontal scrolling, with a collapsible chat list", async () => {
    const page = await openChat("shareId=open", { width: 360, height: 740 });
    const overflows = () => page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    expect(await page.locator("#sidebar").isHidden()).toBe(true);
    await page.click("#toggle-sidebar");
    expect(await page.locator("#sidebar").isVisible()).toBe(true);
    await page.mouse.click(350, 400); // beside the list
    expect(await page.locator("#sidebar").isHidden()).toBe(true);
    await page.click("#toggle-sidebar");
    await page.click("#new-chat");
    expect(await page.locator("#sidebar").isHidden()).toBe(true);

    await send(page, "x".repeat(300));
    await page.locator(".msg.assistant", { hasText: ANSWER }).waitFor();
    expect(await overflows()).toBe(false);
    const box = await page.locator("#send").boundingBox();
    expect(box && box.x + box.width).toBeLessThanOrEqual(360);
  });
});
