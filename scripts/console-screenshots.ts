// Screenshots of every console page (docs/console.md) at 1280×800 and 390×844, against a real gateway
// with usage made by real calls: `npx tsx scripts/console-screenshots.ts [OUT_DIR]` (default
// docs/console). Needs Chromium (/usr/bin/chromium, or CHROMIUM=path).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import { ADMIN_KEY, makeCalls, startConsoleGateway } from "../test/support/console.js";

const out = process.argv[2] ?? join(import.meta.dirname, "..", "docs", "console");
const SIZES = [
  ["desktop", { width: 1280, height: 800 }],
  ["phone", { width: 390, height: 844 }],
] as const;
const PAGES = ["overview", "keys", "usage", "logs", "channels"];

mkdirSync(out, { recursive: true });
const c = await startConsoleGateway();
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
try {
  for (let round = 0; round < 3; round++) await makeCalls(c);
  await c.chat("chat-small", { user: "alice", content: "x".repeat(20_000) }); // one more, a little longer
  await c.admin("/api/admin/keys", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "ci-runner", kind: "global", expiresAt: "2027-01-31T00:00:00Z" }) });
  await new Promise((r) => setTimeout(r, 1500)); // the usage rows' write batch
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

async function shoot(page: Page, path: string) {
  await page.waitForTimeout(300); // charts drawn after their box is measured
  await page.screenshot({ path, fullPage: false });
  console.log(path);
}
