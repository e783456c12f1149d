// The share-link chat window people use (issue 14, docs/api.md#the-chat-window) in a real headless Chromium
// against the whole gateway and a real upstream: markdown, injection that must not run, stop, copy, Chinese
// and English, limit messages, no request to another origin, a phone-width screen, and the bundle served by
// the built gateway (`npm start`) and the sources (`npm run dev`) alike.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../src/store/index.js";
import type { Store } from "../src/store/types.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { BUILT_ENTRY, REPO_ROOT, SOURCE_ENTRY, createMainProcesses } from "./support/main-process.js";
import { history } from "./support/store-rows.js";
import { startUpstream, type Upstream, type UpstreamBehaviour } from "./support/upstream.js";

const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const NEVER = 600_000; // a pause the test never waits out: the stream stays open after its first piece

const MARKDOWN = [
  "Here is the plan:",
  "",
  "- install the gateway",
  "- start it",
  "",
  "```js",
  "const answer = 42;",
  "```",
  "",
  "Done.",
].join("\n");

let browser: Browser;
let upstream: Upstream;
let gw: StartedGateway;
const contexts: BrowserContext[] = [];
const closers: Array<() => Promise<void>> = [];
/** every request any page made, and every script error or policy refusal it reported */
let requests: string[];
let pageErrors: string[];

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  for (const c of contexts.splice(0)) await c.close();
  for (const close of closers.splice(0).reverse()) await close();
});

async function start(behaviour: Partial<UpstreamBehaviour>, link: Record<string, unknown> = {}, model: Record<string, unknown> = {}, store?: Store) {
  upstream = await startUpstream({ chunks: 4, ...behaviour });
  gw = await startGateway({
    channels: [{ name: "local", baseUrl: upstream.url, key: "channel-key-1", models: ["chatglm2"] }],
    llmModels: [{ model: "chatglm2", name: "ChatGLM2", ...model }],
    apps: [{ id: "support-internal-7", name: "Support bot", model: "chatglm2" }],
    shareLinks: [{ shareId: "open", appId: "support-internal-7", ...link }],
  }, { store });
  closers.push(() => gw.close(), () => upstream.close());
  requests = [];
  pageErrors = [];
}

async function newContext(options: { locale?: string; viewport?: { width: number; height: number } } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ locale: options.locale ?? "en-US", viewport: options.viewport });
  context.on("request", (req) => requests.push(req.url()));
  contexts.push(context);
  return context;
}

/** Opens the window and waits until init has answered (the app's name is shown, or an error). */
async function openWindow(context?: BrowserContext): Promise<Page> {
  const page = await (context ?? (await newContext())).newPage();
  page.on("pageerror", (err) => pageErrors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) pageErrors.push(msg.text());
  });
  await page.goto(`${gw.url}/chat/share?shareId=open`);
  await whenReady(page);
  return page;
}

const whenReady = (page: Page) => page.locator("#app-name", { hasText: "Support bot" }).or(page.locator("#error:not([hidden])")).first().waitFor();

async function ask(page: Page, text: string) {
  await page.fill("#input", text);
  await page.click("#send");
}

const answerText = (page: Page) => page.locator(".msg.assistant").last().innerText();
const waitForAnswer = (page: Page) => page.locator(".turn:not(.pending) .copy-answer").last().waitFor();

describe("share window: answers", () => {
  it("renders an answer's markdown: a list, and a code block with its own copy button", async () => {
    await start({ text: MARKDOWN });
    const page = await openWindow();
    await ask(page, "How do I start?");
    await waitForAnswer(page);
    const answer = page.locator(".msg.assistant");
    expect(await answer.locator("ul > li").allInnerTexts()).toEqual(["install the gateway", "start it"]);
    expect(await answer.locator(".code-block pre code").innerText()).toBe("const answer = 42;");
    expect(await answer.locator(".code-block .code-lang").innerText()).toBe("js");
    expect(await answer.locator(".code-block .copy-code").count()).toBe(1);
    expect(await answer.locator("p").first().innerText()).toBe("Here is the plan:");
    expect(pageErrors).toEqual([]);
  });

  it("never runs script from an answer, and loads nothing from another site", async () => {
    const hostile = [
      "Look: <script>window.__pwned = 'script'</script>",
      '<img src="x" onerror="window.__pwned = \'img\'">',
      "[click me](javascript:window.__pwned='link')",
      '<a href="#" onclick="window.__pwned=\'click\'">also me</a>',
      "![tracker](https://tracker.example.com/pixel.png)",
      '<iframe src="https://evil.example.com/"></iframe>',
    ].join("\n\n");
    await start({ text: hostile, chunks: 3 });
    const page = await openWindow();
    await ask(page, "Say something odd");
    await waitForAnswer(page);
    await page.locator(".msg.assistant a", { hasText: "click me" }).click();
    await page.locator(".msg.assistant a", { hasText: "also me" }).click();

    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    const answer = page.locator(".msg.assistant");
    expect(await answer.locator("script, iframe").count()).toBe(0);
    expect(await answer.evaluate((el) => [...el.querySelectorAll("*")].flatMap((n) => n.getAttributeNames()).filter((a) => a.startsWith("on")))).toEqual([]);
    expect(await answer.locator("a", { hasText: "click me" }).getAttribute("href")).toBeNull();
    // the picture from elsewhere became a link to it, and was never fetched
    expect(await answer.locator("a", { hasText: "tracker" }).getAttribute("href")).toBe("https://tracker.example.com/pixel.png");
    expect(requests.filter((url) => !url.startsWith(gw.url))).toEqual([]);
    expect(requests).toContain(`${gw.url}/chat/share/window.js`);
  });

  it("copies an answer (its markdown) and a code block to the clipboard", async () => {
    await start({ text: MARKDOWN });
    const context = await newContext();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gw.url });
    const page = await openWindow(context);
    await ask(page, "How do I start?");
    await waitForAnswer(page);

    await page.click(".copy-answer");
    await page.locator(".copy-answer", { hasText: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(MARKDOWN);
    await page.click(".copy-code");
    await page.locator(".copy-code", { hasText: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe("const answer = 42;");
  });
  it("copies on a plain-http page too (no navigator.clipboard there), through the selection", async () => {
    await start({ text: "plain **text**" });
    const context = await newContext();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gw.url });
    // what a gateway reached as http://192.168.x.x looks like to the page
    await context.addInitScript(() => Object.defineProperty(window, "isSecureContext", { value: false }));
    const page = await openWindow(context);
    await ask(page, "hi");
    await waitForAnswer(page);
    await page.click(".copy-answer");
    await page.locator(".copy-answer", { hasText: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe("plain **text**");
    expect(await page.locator("textarea.offscreen").count()).toBe(0);
  });
});

describe("share window: stop and reload", () => {
  it("stop keeps the partial answer on screen and in the store, and a reload shows it again", async () => {
    await start({ text: "First piece. Second piece. Third piece. Fourth.", chunkDelayMs: NEVER });
    const page = await openWindow();
    await ask(page, "Tell me a long story");
    await page.waitForFunction(() => (document.querySelector(".msg.assistant")?.textContent ?? "") !== "");
    expect(await page.locator("#send").isDisabled()).toBe(true);
    await page.click("#stop");
    await upstream.waitForAbort();

    await page.locator(".stopped").waitFor();
    const partial = await answerText(page);
    expect(partial).toBe("First piece.");
    expect(await page.locator("#send").isEnabled()).toBe(true);
    expect(await page.locator("#stop").isHidden()).toBe(true);
    expect(await page.locator("#error").isHidden()).toBe(true);
    const chatId = await page.locator(".chat-item").first().getAttribute("data-chat-id");
    await expect.poll(() => history(gw.store, "support-internal-7", chatId!, 10).then((m) => m.map((x) => x.content))).toEqual([
      "Tell me a long story",
      "First piece.",
    ]);

    await page.reload();
    await page.locator(".msg.assistant", { hasText: "First piece." }).waitFor();
    expect(await page.locator("#messages .msg").allInnerTexts()).toEqual(["Tell me a long story", "First piece."]);
    expect(await page.locator(".chat-item[aria-current=true]").getAttribute("data-chat-id")).toBe(chatId);
  });

  it("a reload in the middle of an answer shows the partial answer again, even before the gateway has stored it", async () => {
    // the reloaded page asks for the chat while the gateway is still writing the cut answer: held here
    const store = holdRounds(createStore({ driver: "memory" }));
    closers.push(() => (store.release(), store.close()));
    await start({ text: "Part one.Part two.", chunks: 2, chunkDelayMs: NEVER }, {}, {}, store);
    const context = await newContext();
    const page = await openWindow(context);
    await ask(page, "Keep talking");
    await page.waitForFunction(() => (document.querySelector(".msg.assistant")?.textContent ?? "") !== "");
    await page.reload();
    await upstream.waitForAbort();
    await store.held;
    await page.locator(".msg.assistant", { hasText: "Part one." }).waitFor();
    expect(await page.locator("#messages .msg").allInnerTexts()).toEqual(["Keep talking", "Part one."]);
    expect(await page.locator(".chat-item").allInnerTexts()).toEqual([expect.stringContaining("Keep talking")]);
    store.release();

    // the gateway's own copy: a fresh tab (no memory of this one) finds the chat and its partial answer
    const other = await openWindow(context);
    await other.locator(".chat-item", { hasText: "Keep talking" }).click();
    await other.locator(".msg.assistant", { hasText: "Part one." }).waitFor();
    expect(await other.locator("#messages .msg").allInnerTexts()).toEqual(["Keep talking", "Part one."]);
  });

  it("stopping before any text gives the question back and stores nothing", async () => {
    await start({ text: "never seen", hang: true });
    const page = await openWindow();
    await ask(page, "Are you there?");
    await upstream.waitForRequests(1);
    await page.click("#stop");
    await upstream.waitForAbort();
    await page.locator("#stop").waitFor({ state: "hidden" });
    expect(await page.inputValue("#input")).toBe("Are you there?");
    expect(await page.locator("#messages .msg").count()).toBe(0);
    expect(await page.locator("#error").isHidden()).toBe(true);
  });
});

/** A store whose chat rounds wait to be written until `release()`; `held` resolves when one waits. */
function holdRounds(store: Store): Store & { held: Promise<void>; release(): void } {
  let release!: () => void;
  let arrived!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const held = new Promise<void>((resolve) => (arrived = resolve));
  const appendRound: Store["appendRound"] = async (input) => {
    arrived();
    await gate;
    return store.appendRound(input);
  };
  return new Proxy(store, {
    get(target, name) {
      if (name === "appendRound") return appendRound;
      if (name === "held") return held;
      if (name === "release") return release;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Store & { held: Promise<void>; release(): void };
}

describe("share window: language and limits", () => {
  it("speaks Chinese to a Chinese browser and English to others", async () => {
    await start({ text: "ok" });
    const zh = await openWindow(await newContext({ locale: "zh-CN" }));
    expect(await zh.getAttribute("html", "lang")).toBe("zh-CN");
    expect(await zh.locator("#send").innerText()).toBe("发送");
    expect(await zh.locator("#new-chat").innerText()).toBe("+ 新对话");
    expect(await zh.getAttribute("#input", "placeholder")).toContain("输入问题");
    await ask(zh, "你好");
    await waitForAnswer(zh);
    expect(await zh.locator(".copy-answer").innerText()).toBe("复制");

    const en = await openWindow(await newContext({ locale: "en-GB" }));
    expect(await en.getAttribute("html", "lang")).toBe("en");
    expect(await en.locator("#send").innerText()).toBe("Send");
    expect(await en.locator("#new-chat").innerText()).toBe("+ New chat");
    expect(pageErrors).toEqual([]);
  });

  it("too many questions: says when to try again, in the user's language, without the operator's numbers", async () => {
    await start({ text: "ok" }, { qpm: 1 });
    // what the gateway itself tells a share-link user
    const body = { shareId: "open", outLinkUid: "probe", messages: [{ role: "user", content: "hi" }] };
    const post = () => fetch(`${gw.url}/api/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await post()).status).toBe(200);
    const refused = await post();
    const retryAfter = Number(refused.headers.get("retry-after"));
    const { error } = await refused.json();
    expect(refused.status).toBe(429);
    expect(error.code).toBe("rate_limit_exceeded");
    expect(error.message).toBe(`Too many questions — try again in ${retryAfter} s.`);

    const en = await openWindow();
    await ask(en, "again?");
    const banner = en.locator("#error:not([hidden])");
    await banner.waitFor();
    expect(await banner.innerText()).toMatch(/^Too many questions — try again in \d+ s\.$/);
    expect(await en.inputValue("#input")).toBe("again?");

    const zh = await openWindow(await newContext({ locale: "zh-TW" }));
    await ask(zh, "再问一次");
    await zh.locator("#error:not([hidden])").waitFor();
    const text = await zh.locator("#error").innerText();
    expect(text).toMatch(/^提问太频繁，请 \d+ 秒后再试。$/);
    for (const leak of [await banner.innerText(), text]) {
      expect(leak).not.toContain("support-internal-7");
      expect(leak).not.toMatch(/\b1 requests?\b|per minute|qpm/);
    }
  });

  it("a used-up allowance names neither the app nor the budget", async () => {
    // 0.05 points cannot pay for the prompt and one token at 10 points per 1,000 tokens
    await start({ text: "ok" }, { maxUsagePoints: 0.05 }, { charsPointsPrice: 10 });
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ shareId: "open", outLinkUid: "probe", messages: [{ role: "user", content: "hi" }] }),
    });
    const { error } = await res.json();
    expect([res.status, error.code]).toEqual([429, "insufficient_quota"]);
    expect(error.message).not.toMatch(/support-internal-7|0\.05|points budget/);

    const page = await openWindow();
    await ask(page, "one more");
    await page.locator("#error:not([hidden])").waitFor();
    expect(await page.locator("#error").innerText()).toBe("This chat link has used up its allowance. Ask whoever shared it with you to raise it.");
  });
});

describe("share window: a phone", () => {
  it("390 px wide: no sideways scrolling, even with a long code line and a wide table", async () => {
    const wide = ["```", "x".repeat(400), "```", "", "| a | b | c |", "|---|---|---|", `| ${"long ".repeat(40)} | ${"cell ".repeat(40)} | z |`].join("\n");
    await start({ text: wide });
    const page = await openWindow(await newContext({ viewport: { width: 390, height: 844 } }));
    const meta = await page.getAttribute('meta[name="viewport"]', "content");
    expect(meta).toContain("width=device-width");
    await ask(page, "y".repeat(300));
    await waitForAnswer(page);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    // the code scrolls inside its own box
    expect(await page.locator(".code-block pre").evaluate((pre) => pre.scrollWidth > pre.clientWidth)).toBe(true);
    const send = await page.locator("#send").boundingBox();
    expect(send!.x + send!.width).toBeLessThanOrEqual(390);
  });
});

describe("share window: served by the gateway", () => {
  it("a same-origin script under a strict policy, revalidated by its ETag", async () => {
    await start({ text: "ok" });
    const page = await fetch(`${gw.url}/chat/share?shareId=open`);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    const html = await page.text();
    expect(html).toMatch(/<script src="share\/window.js" defer><\/script>/);
    expect(html).not.toMatch(/<script>/);

    const script = await fetch(`${gw.url}/chat/share/window.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    const code = await script.text();
    expect(code).toContain("DOMPurify");
    const again = await fetch(`${gw.url}/chat/share/window.js`, { headers: { "if-none-match": script.headers.get("etag")! } });
    expect(again.status).toBe(304);
  });

  it("the build (dist/) and the sources (tsx) both serve the working window", async () => {
    const processes = createMainProcesses();
    // the shipped config, with its store in memory so the repository gets no database file
    const dir = mkdtempSync(join(tmpdir(), "sluice-window-"));
    const configPath = join(dir, "config.json");
    const shipped = JSON.parse(readFileSync(join(REPO_ROOT, "config.json"), "utf8"));
    writeFileSync(configPath, JSON.stringify({ ...shipped, store: { driver: "memory" } }));
    requests = [];
    pageErrors = [];
    try {
      for (const entry of [BUILT_ENTRY, SOURCE_ENTRY]) {
        const main = await processes.startMain(entry, ["--config", configPath]);
        const context = await newContext();
        const page = await context.newPage();
        page.on("pageerror", (err) => pageErrors.push(err.message));
        await page.goto(`${main.url}/chat/share?shareId=demo-public`);
        await page.locator("#input").fill("Hello **there**");
        await page.click("#send");
        await page.locator(".msg.assistant strong", { hasText: "there" }).waitFor();
        expect(await page.locator(".msg.assistant").innerText()).toBe("Echo: Hello there");
        main.proc.kill("SIGTERM");
        await main.exited;
      }
      expect(pageErrors).toEqual([]);
    } finally {
      await processes.killAll();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
