// The share-link chat window: GET /chat/share (one static page; it reads shareId and authToken from
// its own URL, so it is the same for every link) and GET /chat/share/window.js (its script: the
// sources in ./window bundled with marked and DOMPurify by esbuild, in memory, on the first request
// — so `npm start`, `npm run dev` and the tests all serve the same bundle, and no CDN is involved).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const PAGE = readFileSync(new URL("./page.html", import.meta.url), "utf8");
const style = /<style>([\s\S]*?)<\/style>/.exec(PAGE)?.[1] ?? "";
const WINDOW_ENTRY = fileURLToPath(new URL("./window/main.js", import.meta.url));

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("base64");

// scripts only from this gateway, the page's own style only (by hash), fetches only to itself
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  `style-src 'sha256-${sha256(style)}'`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy": CONTENT_SECURITY_POLICY,
  // the URL carries the user's authToken: never send it on as a Referer
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

interface Bundle {
  code: string;
  etag: string;
}

let bundle: Promise<Bundle> | undefined;

/** The window's script, bundled once per process; a failed build is tried again on the next request. */
function loadBundle(): Promise<Bundle> {
  bundle ??= buildWindow().catch((err: unknown) => {
    bundle = undefined;
    throw err;
  });
  return bundle;
}

async function buildWindow(): Promise<Bundle> {
  const result = await build({
    entryPoints: [WINDOW_ENTRY],
    bundle: true,
    write: false,
    minify: true,
    format: "iife",
    platform: "browser",
    // browsers of the last few years, phones included
    target: "es2020",
    legalComments: "none",
    logLevel: "silent",
  });
  const code = result.outputFiles[0]!.text;
  return { code, etag: `"${sha256(code).slice(0, 27)}"` };
}

export function sharePageResponse(): Response {
  void loadBundle().catch(() => {}); // the script is asked for next: start building it now
  return new Response(PAGE, { headers: PAGE_HEADERS });
}

/** The window's script; revalidated on each load (an ETag), so a new gateway version is seen at once. */
export async function shareWindowScriptResponse(ifNoneMatch: string | null): Promise<Response> {
  const { code, etag } = await loadBundle();
  const headers = {
    "content-type": "text/javascript; charset=utf-8",
    "cache-control": "no-cache",
    etag,
    "x-content-type-options": "nosniff",
  };
  if (ifNoneMatch === etag) return new Response(null, { status: 304, headers });
  return new Response(code, { headers });
}
