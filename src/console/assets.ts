// The console (docs/console.md): GET /console/ (one static page), /console/console.js and
// /console/console.css (the sources in ./app bundled with preact and uPlot, see ./bundle.ts). The
// build writes the bundle beside this module and the built gateway reads it once, at start; run
// from the sources it is bundled on the first request. Nothing is fetched from anywhere else: the
// page's policy allows this origin only, no inline script or style, no frame around it.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CONSOLE_SCRIPT_FILE, CONSOLE_STYLE_FILE, bundleConsole } from "./bundle.js";

const PAGE = readFileSync(new URL("./index.html", import.meta.url), "utf8");

/** docs/console.md#security: this origin only; styles from the stylesheet (uPlot and preact set
 *  element styles through the DOM, which `style-src` does not govern) */
export const CONSOLE_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const COMMON = {
  "content-security-policy": CONSOLE_POLICY,
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

interface Asset {
  body: string;
  etag: string;
}
interface Assets {
  script: Asset;
  style: Asset;
}

const asset = (body: string): Asset => ({ body, etag: `"${createHash("sha256").update(body, "utf8").digest("base64url").slice(0, 27)}"` });

const FROM_SOURCES = import.meta.url.endsWith(".ts");
let assets: Promise<Assets> | undefined = FROM_SOURCES ? undefined : Promise.resolve(readBuilt());

/** The files `npm run build` wrote; their absence stops the start (a build that did not finish). */
function readBuilt(): Assets {
  const read = (name: string) => {
    const file = new URL(`./${name}`, import.meta.url);
    try {
      return readFileSync(file, "utf8");
    } catch (err) {
      throw new Error(`the console's ${fileURLToPath(file)} is missing: run \`npm run build\``, { cause: err });
    }
  };
  return { script: asset(read(CONSOLE_SCRIPT_FILE)), style: asset(read(CONSOLE_STYLE_FILE)) };
}

/** Bundled once per process from the sources (a failed bundling is tried again on the next request). */
function loadAssets(): Promise<Assets> {
  assets ??= bundleConsole().then(
    (b) => ({ script: asset(b.script), style: asset(b.style) }),
    (err: unknown) => {
      assets = undefined;
      throw err;
    },
  );
  return assets;
}

/** GET /console/ (and /console): the page; it holds no data, so it is the same for everyone. */
export function consolePage(): Response {
  void loadAssets().catch(() => {}); // the script and style are asked for next: bundle them now
  return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...COMMON } });
}

/** GET /console/console.js and /console/console.css: revalidated on each load (an ETag). */
export async function consoleAsset(path: string, ifNoneMatch: string | null): Promise<Response> {
  const { script, style } = await loadAssets();
  const [file, type] = path.endsWith(".css") ? [style, "text/css"] : [script, "text/javascript"];
  const headers = { "content-type": `${type}; charset=utf-8`, "cache-control": "no-cache", etag: file.etag, ...COMMON };
  if (ifNoneMatch === file.etag) return new Response(null, { status: 304, headers });
  return new Response(file.body, { headers });
}
