// The share-link chat window (GET /chat/share): one static page, its script inlined, no framework
// and no build step. The page reads shareId and authToken from its own URL, so it is the same for
// every link and built once at start-up.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const markup = readFileSync(new URL("./page.html", import.meta.url), "utf8");
const script = readFileSync(new URL("./page-script.js", import.meta.url), "utf8");
const style = /<style>([\s\S]*?)<\/style>/.exec(markup)?.[1] ?? "";
const PAGE = markup.replace("<!--SCRIPT-->", () => `<script>${script}</script>`);

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

// hashes instead of 'unsafe-inline': only this page's own script and style may run
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${sha256(script)}`,
  `style-src ${sha256(style)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy": CONTENT_SECURITY_POLICY,
  // the URL carries the user's authToken: never send it on as a Referer
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

export function sharePageResponse(): Response {
  return new Response(PAGE, { headers: HEADERS });
}
