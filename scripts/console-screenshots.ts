// Screenshots of every console page (docs/console.md) at 1280×800 and 390×844, against a real gateway
// with usage made by real calls: `npx tsx scripts/console-screenshots.ts [OUT_DIR]` (default
// docs/console). Needs Chromium (/usr/bin/chromium, or CHROMIUM=path).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import { ADMIN_KEY, makeCalls, startConsoleGateway, type ConsoleGateway } from "../test/support/console.js";

const out = process.argv[2] ?? join(import.meta.dirname, "..", "docs", "console");
const SIZES = [
  ["desktop", { width: 1280, height: 800 }],
  ["phone", { width: 390, height: 844 }],
] as const;
const PAGES = ["overview", "keys", "usage", "logs", "channels"];

mkdirSync(out, { recursive: true });
const c = await startConsoleGateway({ markup: false });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-lcd-text"] });
try {
  let calls = 0;
  for (let round = 0; round < 2; round++) calls += await makeCalls(c);
  // the calls' usage rows are written in batches: wait until all are in, then add the history
  while ((await c.admin<{ totals: { requests: number } }>("/api/v1/usage")).totals.requests < calls) await new Promise((r) => setTimeout(r, 100));
  await backfill(c);
  await c.admin("/api/admin/keys", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "ci-runner", kind: "global", expiresAt: "2027-01-31T00:00:00Z" }) });
  for (const [size, viewport] of SIZES) {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: "en-US", timezoneId: "Europe/Berlin" });
    const page = await context.newPage();
    await page.goto(`${c.gw.url}/console/`);
    await shoot(page, join(out, `sign-in-${size}.png`));
    await page.fill("input[name=key]", ADMIN_KEY);
    await page.click("button[type=submit]");
    for (const name of PAGES) {
      await page.click(`.tabs a[href="#/${name}"]`);
      await page.waitForSelector(`#page-${name}`);
      await page.waitForFunction(() => document.querySelectorAll(".state.loading").length === 0);
      if (name === "logs") {
        await page.selectOption("select[name=span]", "3600"); // the last hour: the calls just made
        await page.waitForFunction(() => document.querySelectorAll(".state.loading").length === 0);
        await page.click("table[aria-label=calls] tbody tr >> nth=0");
        await page.waitForSelector("#request-body");
      }
      await shoot(page, join(out, `${name}-${size}.png`));
    }
    await context.close();
  }
} finally {
  await browser.close();
  await c.close();
}

/** A week of history for the pictures only (the tests use real calls alone): usage rows written to
 *  the store as calls would have written them, more by day than by night, a few failures. */
async function backfill(c: ConsoleGateway) {
  const channels = await c.admin<{ data: Array<{ id: number; name: string }> }>("/api/channels/all");
  const idOf = new Map(channels.data.map((ch) => [ch.name, ch.id]));
  const models = [
    { model: "chat-small", channel: "gpu-a", inPrice: 0.5, outPrice: 1.5, weight: 6 },
    { model: "chat-large", channel: "gpu-b", inPrice: 2, outPrice: 6, weight: 2 },
  ];
  const callers = [
    { appId: "support-bot", keyName: "support", users: ["alice", "bob", "carol"] },
    { appId: "research", keyName: "research-team", users: ["dana", "erik"] },
  ];
  let seed = 7;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const now = Date.now();
  for (let h = 7 * 24; h >= 1; h--) {
    const hour = new Date(now - h * 3_600_000).getUTCHours();
    const busy = 1 + Math.max(0, Math.sin(((hour - 6) / 24) * 2 * Math.PI)) * 5;
    for (let n = Math.round(busy * random() * 2); n > 0; n--) {
      const m = random() * 8 < models[0]!.weight ? models[0]! : models[1]!;
      const who = callers[random() < 0.7 ? 0 : 1]!;
      const inputTokens = Math.round(200 + random() * 1500);
      const cachedTokens = Math.round(inputTokens * random() * 0.8);
      const outputTokens = Math.round(50 + random() * 600);
      const status = random() < 0.04 ? 500 : random() < 0.03 ? 429 : 200;
      const durationMs = Math.round(300 + random() * 4000);
      await c.gw.store.recordUsage(
        {
          time: now - h * 3_600_000 + Math.round(random() * 3_500_000),
          appId: who.appId, keyName: who.keyName, shareId: null, model: m.model, channel: m.channel, channelId: idOf.get(m.channel),
          inputTokens, outputTokens, cachedTokens, points: Math.round((inputTokens * m.inPrice + outputTokens * m.outPrice) / 10) / 100,
          status, durationMs, ttfbMs: Math.round(durationMs * 0.2), chatId: null, finishReason: status === 200 ? "stop" : null,
          requestId: `backfill-${h}-${n}`, endpoint: "/v1/chat/completions", attempts: 1, error: status === 200 ? null : "upstream_error: the model server failed",
          user: who.users[Math.floor(random() * who.users.length)]!,
        },
        [],
      );
    }
  }
}

async function shoot(page: Page, path: string) {
  await page.waitForTimeout(300); // charts drawn after their box is measured
  await page.screenshot({ path, fullPage: false });
  console.log(path);
}

