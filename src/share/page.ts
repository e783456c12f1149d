// The share-link chat window: GET /chat/share (one static page; it reads shareId and authToken from
// its own URL, so it is the same for every link) and GET /chat/share/window.js (its script: the
// sources in ./window bundled with marked and DOMPurify, see ./window-bundle.ts). The build writes
// the bundle beside this module and the built gateway reads it once, at start; run from the sources
// it is bundled on the first request. Either way the gateway serves it itself: no CDN is involved.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ServerConfig } from "../config/schema.js";
import { WINDOW_BUNDLE_FILE, bundleShareWindow } from "./window-bundle.js";

const PAGE = readFileSync(new URL("./page.html", import.meta.url), "utf8");
const style = /<style>([\s\S]*?)<\/style>/.exec(PAGE)?.[1] ?? "";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("base64");

// scripts only from this gateway, the page's own style only (by hash), fetches only to itself
const BASE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  `style-src 'sha256-${sha256(style)}'`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
];

interface Bundle {
  code: string;
  etag: string;
}

/** A module run from src/ (tsx, `npm run dev`, the tests): no build wrote the bundle beside it. */
const FROM_SOURCES = import.meta.url.endsWith(".ts");

let bundle: Promise<Bundle> | undefined = FROM_SOURCES ? undefined : Promise.resolve(readBuiltBundle());

function withEtag(code: string): Bundle {
  return { code, etag: `"${sha256(code).slice(0, 27)}"` };
}

/** The bundle `npm run build` wrote; its absence stops the start (a build that did not finish). */
function readBuiltBundle(): Bundle {
  const file = new URL(`./${WINDOW_BUNDLE_FILE}`, import.meta.url);
  try {
    return withEtag(readFileSync(file, "utf8"));
  } catch (err) {
    throw new Error(`the share window's script ${fileURLToPath(file)} is missing: run \`npm run build\``, { cause: err });
  }
}

/** The window's script: the built one, or bundled once per process from the sources (a failed
 *  bundling is tried again on the next request). */
function loadBundle(): Promise<Bundle> {
  bundle ??= bundleShareWindow().then(withEtag, (err: unknown) => {
    bundle = undefined;
    throw err;
  });
  return bundle;
}

/** The page's answer under one config: `frameAncestors` says who may show it in a frame. */
export function createSharePage(config: ServerConfig["sharePage"]): () => Response {
  const headers = {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": [...BASE_POLICY, `frame-ancestors ${config.frameAncestors.join(" ")}`].join("; "),
    // the URL carries the user's authToken: never send it on as a Referer
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
  };
  return () => {
    void loadBundle().catch(() => {}); // the script is asked for next: from the sources, bundle it now
    return new Response(PAGE, { headers });
  };
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
