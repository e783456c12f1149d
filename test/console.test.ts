// The console (issue 41, docs/console.md) in a real headless Chromium against a real gateway whose
// usage, logs and bodies were made by real calls: sign-in and its key kept out of URLs, cookies and
// localStorage; a key created, seen once, revoked and then refused; the usage chart and table against
// GET /api/v1/usage; a call's bodies redacted; a channel disabled from the page; markup shown as
// text; a wrong or revoked admin key; the page's headers; a phone's width.
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ADMIN_KEY, APP_KEY, DOOMED_ADMIN_KEY, MARKUP, OTHER_APP_KEY, PASTED_SECRET, makeCalls, startConsoleGateway, type ConsoleGateway } from "./support/console.js";

/** the console's own formatting (plain browser JavaScript, untyped): the table is compared with the API through it */
interface Format {
  compact(n: number): string;
  integer(n: number): string;
  points(n: number): string;
  startOfDay(date: string, tz: string): number;
}
const FORMAT_MODULE = "../src/console/app/format.js";
const { compact, integer, points, startOfDay } = (await import(FORMAT_MODULE)) as Format;

const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

let browser: Browser;
let c: ConsoleGateway;
let calls: number;
const contexts: BrowserContext[] = [];
/** what every page did: requests, script errors and policy refusals, dialogs (an alert() that ran) */
let requests: string[];
let problems: string[];
let dialogs: string[];

beforeAll(async () => {
  [browser, c] = await Promise.all([chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS }), startConsoleGateway()]);
  calls = await makeCalls(c);
  await vi.waitFor(async () => expect((await c.admin<{ totals: { requests: number } }>("/api/v1/usage")).totals.requests).toBe(calls), { timeout: 10_000 });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await c?.close();
});
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await ctx.close();
});

async function open(viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await browser.newContext({ viewport, locale: "en-US", timezoneId: "UTC" });
  contexts.push(context);
  requests = [];
  problems = [];
  dialogs = [];
  context.on("request", (r) => requests.push(r.url()));
  const page = await context.newPage();
  page.on("pageerror", (err) => problems.push(err.message));
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.addInitScript(() => document.addEventListener("securitypolicyviolation", (e) => console.error(`CSP refused ${e.violatedDirective} ${e.blockedURI}`)));
  await page.goto(`${c.gw.url}/console/`);
  return page;
}

async function signIn(page: Page, key = ADMIN_KEY) {
  await page.fill("input[name=key]", key);
  await page.click("#sign-in button[type=submit]");
}

async function go(page: Page, name: string) {
  await page.click(`.tabs a[href="#/${name}"]`);
  await page.waitForSelector(`#page-${name}`);
  await page.waitForFunction(() => document.querySelectorAll(".state.loading").length === 0);
}

const cellTexts = (page: Page, table: string) =>
  page.locator(`table[aria-label=${table}] tbody tr`).evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => (td as HTMLElement).innerText.trim())));

describe("console: serving", () => {
  it("serves the page, its script and style with a strict policy, no frame and no referrer", async () => {
    for (const path of ["/console/", "/console", "/console/console.js", "/console/console.css"]) {
      const res = await fetch(c.gw.url + path);
      expect(res.status, path).toBe(200);
      const csp = res.headers.get("content-security-policy")!;
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    }
    const html = await (await fetch(`${c.gw.url}/console/`)).text();
    expect(html).not.toMatch(/<script>|<style>|style=|https?:\/\//);
    expect((await fetch(`${c.gw.url}/console/console.css`)).headers.get("content-type")).toContain("text/css");
  });
});

describe("console: sign-in", () => {
  it("tells a wrong key so and stays on sign-in; a non-admin key too", async () => {
    const page = await open();
    await signIn(page, "sk-not-a-key-of-this-gateway");
    await expect.poll(() => page.locator("#sign-in-error").innerText()).toMatch(/^Wrong key: /);
    expect(await page.locator("#sign-in").isVisible()).toBe(true);
    await signIn(page, APP_KEY);
    await expect.poll(() => page.locator("#sign-in-error").innerText()).toContain("not an admin key");
    expect(await page.locator(".bar").count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it("keeps the admin key out of every URL, cookie and local storage, on every page, with no script error or policy refusal", async () => {
    const page = await open();
    await signIn(page);
    for (const name of ["overview", "keys", "usage", "logs", "channels"]) await go(page, name);
    expect(requests.length).toBeGreaterThan(10);
    for (const url of requests) expect(url).not.toContain(ADMIN_KEY);
    expect(requests.every((u) => u.startsWith(c.gw.url))).toBe(true);
    expect(page.url()).not.toContain(ADMIN_KEY);
    expect(await page.context().cookies()).toEqual([]);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toContain(ADMIN_KEY);
    expect(problems).toEqual([]);
  });

  it("returns to sign-in when the admin key is taken away mid-session", async () => {
    const page = await open();
    await signIn(page, DOOMED_ADMIN_KEY);
    await go(page, "keys");
    await c.dropDoomedKey();
    await page.click('.tabs a[href="#/usage"]');
    await page.locator("#sign-in").waitFor();
    expect(await page.locator(".notice").innerText()).toContain("no longer accepts this admin key");
    expect(await page.evaluate(() => Object.values(sessionStorage))).not.toContain(DOOMED_ADMIN_KEY);
  });
});

describe("console: keys", () => {
  it("creates a key shown once with a copy button, revokes it, and its next call is refused", async () => {
    const page = await open();
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
    await signIn(page);
    await go(page, "keys");
    await page.click("#new-key-button");
    await page.fill("#create-key input[name=name]", "console-made");
    await page.fill("#create-key input[name=appId]", "support-bot");
    await page.fill("#create-key input[name=maxUsagePoints]", "25");
    await page.click("#create-key button[type=submit]");
    const key = (await page.locator("#new-key").innerText()).trim();
    expect(key).toMatch(/^sk-sluice-[A-Za-z0-9_-]{32,}$/);
    await page.click("#copy-key");
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    expect((await c.chat("chat-small", { key })).status).toBe(200);

    // dismissed, it is gone for good: not in the page, nor after a reload
    await page.click("#reveal-done");
    expect(await page.locator("body").innerText()).not.toContain(key);
    await page.reload();
    await page.waitForSelector("table[aria-label=keys]");
    expect(await page.content()).not.toContain(key);
    const row = page.locator("table[aria-label=keys] tbody tr", { hasText: "console-made" });
    await expect.poll(() => row.innerText()).toContain("24.5 left of 25 points") // its one call: 0.48 points;

    // an API error shows the API's own message
    await page.click("#new-key-button");
    await page.fill("#create-key input[name=name]", "console-made");
    await page.fill("#create-key input[name=appId]", "support-bot");
    await page.click("#create-key button[type=submit]");
    await expect.poll(() => page.locator("#create-key .error-message").innerText()).toContain('A key named "console-made" exists already');

    await row.locator("button", { hasText: "Revoke" }).click();
    await row.locator("button", { hasText: "Yes, revoke" }).click();
    await expect.poll(() => row.locator(".badge").innerText()).toBe("revoked");
    const refused = await c.chat("chat-small", { key });
    expect(refused.status).toBe(401);
    // the 409 above is logged by Chromium as a failed resource: expected, and nothing else
    expect(problems.filter((p) => !p.startsWith("Failed to load resource: the server responded with a status of 409"))).toEqual([]);
  });
});

describe("console: usage", () => {
  it("shows the chart and the table of GET /api/v1/usage for the same range, by key and day", async () => {
    const page = await open();
    await signIn(page);
    await go(page, "usage");
    const from = await page.inputValue("input[name=from]");
    const to = await page.inputValue("input[name=to]");
    const range = `from=${new Date(startOfDay(from, "UTC")).toISOString()}&to=${new Date(startOfDay(to, "UTC") + 86_400_000).toISOString()}&tz=UTC`;
    type Group = { key: string; day: string; user: string | null; requests: number; inputTokens: number; outputTokens: number; cachedTokens: number; points: number };
    const api = await c.admin<{ groups: Group[] }>(`/api/v1/usage?groupBy=key,day&${range}`);
    expect(api.groups.length).toBeGreaterThanOrEqual(2);
    const rows = await cellTexts(page, "usage");
    expect(rows).toEqual(api.groups.map((g) => [g.key, g.day, integer(g.requests), compact(g.inputTokens), compact(g.outputTokens), compact(g.cachedTokens), points(g.points)]));

    const chart = JSON.parse((await page.locator(".chart-box").getAttribute("data-chart"))!) as { x: number[]; series: Array<{ label: string; values: number[] }> };
    for (const g of api.groups) {
      const series = chart.series.find((s) => s.label === g.key)!;
      expect(series.values[chart.x.indexOf(startOfDay(g.day, "UTC") / 1000)]).toBeCloseTo(g.points, 6);
    }
    expect(chart.series.map((s) => s.label).sort()).toEqual([...new Set(api.groups.map((g) => g.key))].sort());

    // by user, no day: a bar per user
    await page.selectOption("select[name=by]", "user");
    await page.uncheck("input[name=byDay]");
    await page.waitForSelector(".bars");
    const byUser = await c.admin<{ groups: Group[] }>(`/api/v1/usage?groupBy=user&${range}`);
    const bars = JSON.parse((await page.locator(".bars").getAttribute("data-chart"))!) as { series: Array<{ label: string; values: number[] }> };
    expect(Object.fromEntries(bars.series.map((s) => [s.label, s.values[0]]))).toEqual(Object.fromEntries(byUser.groups.map((g) => [g.user ?? "(none)", g.points])));
    expect((await cellTexts(page, "usage")).map((r) => r[0])).toEqual(byUser.groups.map((g) => g.user ?? "(none)"));
  });

  it("asks for the days of the zone picked in the bar, and shows them", async () => {
    const page = await open();
    await signIn(page);
    await go(page, "usage");
    const tz = "America/St_Johns"; // -03:30 in winter: its days start at 03:30 UTC
    await page.selectOption("select[name=tz]", tz);
    await expect.poll(() => page.locator("#page-usage .muted.small").innerText()).toContain(`Days in ${tz}`);
    await page.waitForFunction(() => document.querySelectorAll(".state.loading").length === 0);
    const from = await page.inputValue("input[name=from]");
    const to = await page.inputValue("input[name=to]");
    const range = `from=${new Date(startOfDay(from, tz)).toISOString()}&to=${new Date(startOfDay(to, tz) + 86_400_000).toISOString()}&tz=${tz}`;
    expect(range).toContain("T03:30:00.000Z");
    const api = await c.admin<{ groups: Array<{ key: string; day: string; requests: number }> }>(`/api/v1/usage?groupBy=key,day&${range}`);
    expect((await cellTexts(page, "usage")).map((r) => r.slice(0, 3))).toEqual(api.groups.map((g) => [g.key, g.day, integer(g.requests)]));
    expect(requests.some((u) => u.includes(`tz=${encodeURIComponent(tz)}`))).toBe(true);
  });

  it("downloads the API's CSV of the same query", async () => {
    const page = await open();
    await signIn(page);
    await go(page, "usage");
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#csv")]);
    const body = await new Response((await download.createReadStream()) as unknown as ReadableStream).text();
    expect(body.split(/\r?\n/)[0]).toBe("key,day,requests,inputTokens,outputTokens,cachedTokens,points");
    expect(body).toContain("research-team,");
  });
});

describe("console: logs", () => {
  it("shows a call's bodies with its secrets redacted", async () => {
    const page = await open();
    await signIn(page);
    await go(page, "logs");
    await page.fill("input[name=model_name]", "chat-large");
    await page.press("input[name=model_name]", "Enter");
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=calls] tbody tr").length === 3);
    await page.click("table[aria-label=calls] tbody tr >> nth=0"); // the newest: carol's, with a key pasted in
    const request = await page.locator("#request-body").innerText();
    expect(request).toContain("carol");
    expect(request).toContain("[redacted]");
    expect(request).not.toContain(APP_KEY);
    expect(request).not.toContain(PASTED_SECRET);
    expect(await page.locator("#response-body").innerText()).toContain("Hello from the test upstream");
    // an app that keeps no bodies: said so
    await page.fill("input[name=token_name]", "research-team");
    await page.press("input[name=token_name]", "Enter");
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=calls] tbody tr").length === 1);
    await page.click("table[aria-label=calls] tbody tr >> nth=0");
    await expect.poll(() => page.locator("#log-detail").innerText()).toContain("No bodies kept for this call");
    expect(await page.content()).not.toContain(OTHER_APP_KEY);
  });
});

describe("console: markup from requests", () => {
  it("shows a model name and a user id of <img src=x onerror=…> as text and runs no script", async () => {
    const page = await open();
    await signIn(page);
    await page.waitForSelector(".chart-box");
    expect(await page.locator("#page-overview").innerText()).toContain(MARKUP);
    await go(page, "usage");
    await page.selectOption("select[name=by]", "user");
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=usage] tbody tr").length > 0 && document.querySelector("table[aria-label=usage] th")?.textContent === "User");
    expect((await cellTexts(page, "usage")).map((r) => r[0])).toContain(MARKUP);
    await page.selectOption("select[name=by]", "model");
    await page.waitForFunction(() => document.querySelector("table[aria-label=usage] th")?.textContent === "Model");
    expect((await cellTexts(page, "usage")).map((r) => r[0])).toContain(MARKUP);
    await go(page, "logs");
    await page.fill("input[name=model_name]", MARKUP);
    await page.press("input[name=model_name]", "Enter");
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=calls] tbody tr").length === 1);
    expect((await cellTexts(page, "calls"))[0]).toContain(MARKUP);
    await page.click("table[aria-label=calls] tbody tr >> nth=0");
    await page.waitForSelector("#request-body");
    await go(page, "channels");
    expect(await page.locator("[data-channel=gpu-a]").innerText()).toContain(MARKUP);
    expect(await page.locator("img").count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  });
});

describe("console: channels", () => {
  it("disables a channel from the page: it takes no more calls; enabled again, it does", async () => {
    const page = await open();
    await signIn(page);
    await go(page, "channels");
    const card = page.locator("[data-channel=gpu-b]");
    await card.locator("button", { hasText: "Test" }).click();
    await expect.poll(() => card.locator(".test-result").innerText()).toMatch(/^passed in /);
    await card.locator("button", { hasText: "Disable" }).click();
    await expect.poll(() => card.locator(".badges").first().innerText()).toContain("disabled");
    const refused = await c.chat("chat-large");
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("model_unavailable");
    await card.locator("button", { hasText: "Enable" }).click();
    await expect.poll(() => card.locator(".badges").first().innerText()).toContain("enabled");
    await vi.waitFor(async () => expect((await c.chat("chat-large")).status).toBe(200));
    await page.click("#reload");
    await expect.poll(() => page.locator("#reload-result").innerText()).toBe("Config reloaded.");
  });
});

describe("console: before any call", () => {
  it("says so on every page instead of showing a blank one", async () => {
    const fresh = await startConsoleGateway();
    try {
      const page = await open();
      await page.goto(`${fresh.gw.url}/console/`);
      await signIn(page);
      await page.waitForSelector("#page-overview .state.empty");
      expect(await page.locator("#page-overview .state.empty").first().innerText()).toContain("No calls in this range yet");
      await go(page, "usage");
      expect(await page.locator("#page-usage .state.empty").innerText()).toBe("No usage in this range.");
      await go(page, "logs");
      expect(await page.locator("#page-logs .state.empty").innerText()).toBe("No calls match these filters.");
      await go(page, "channels");
      expect(await page.locator("[data-channel=gpu-a]").innerText()).toContain("no calls");
      expect(problems).toEqual([]);
    } finally {
      await fresh.close();
    }
  });
});

describe("console: a phone", () => {
  it("fits every page in 390 px without sideways scrolling of the page", async () => {
    const page = await open({ width: 390, height: 844 });
    await signIn(page);
    for (const name of ["overview", "keys", "usage", "logs", "channels"]) {
      await go(page, name);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), name).toBeLessThanOrEqual(390);
    }
    expect(problems).toEqual([]);
  });
});
