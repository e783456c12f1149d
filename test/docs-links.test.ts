// Code comments cite the project's reference as `docs/<file>.md#<anchor>` (docs/architecture.md#where-new-work-lands):
// every such citation in src/ and test/ must name a file of docs/ and a heading of it, by the anchor
// GitHub makes of the heading, and none may cite a document outside the repository. The links between
// the docs pages and from the README are held to the same.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/main-process.js";

const CITATION = /docs\/([A-Za-z0-9_-]+\.md)(#[A-Za-z0-9_-]+)?/g;
/** A Markdown link to a page of docs/ (relative to the linking page), with its anchor if any. */
const MD_LINK = /\]\(((?:docs\/)?[A-Za-z0-9_-]+\.md)(#[^)\s]*)?\)|\]\((#[^)\s]+)\)/g;

/** The anchor GitHub gives a heading: its text lower-cased, every character but letters, digits,
 *  spaces, `-` and `_` dropped, spaces made `-`; a repeated anchor gets `-1`, `-2`, … */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    const heading = fence === undefined ? /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line) : null;
    if (!heading) continue;
    const text = heading[1]!.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/[`*]/g, "");
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name), ext) : ext.test(e.name) ? [join(dir, e.name)] : [],
  );
}

const DOCS = join(REPO_ROOT, "docs");
const anchorsOf = new Map<string, Set<string> | undefined>();
function anchors(file: string): Set<string> | undefined {
  if (!anchorsOf.has(file)) {
    const path = join(DOCS, file);
    anchorsOf.set(file, existsSync(path) ? headingAnchors(readFileSync(path, "utf8")) : undefined);
  }
  return anchorsOf.get(file);
}

/** What is wrong with a reference to `file` (in docs/) and `anchor` (with its #), or undefined. */
function problem(file: string, anchor: string | undefined): string | undefined {
  const known = anchors(file);
  if (!known) return `docs/${file} does not exist`;
  if (anchor && !known.has(anchor.slice(1))) return `docs/${file} has no heading ${anchor}`;
  return undefined;
}

/** This file: its fixtures name missing pages and outside documents on purpose. */
const SELF = fileURLToPath(import.meta.url);
/** The team's contract notes, a file outside the repository: code cites docs/ instead. */
const OUTSIDE = /\bCONTRACTS\b/;

/** Every `docs/<file>.md#<anchor>` in the sources under `folder` (of the repository), with what is
 *  wrong with each, and every line that cites a document outside the repository. */
function citationsUnder(folder: string): { cited: number; broken: string[]; outside: string[] } {
  const found = { cited: 0, broken: [] as string[], outside: [] as string[] };
  for (const path of filesUnder(join(REPO_ROOT, folder), /\.(ts|js|mjs|html)$/)) {
    if (path === SELF) continue;
    readFileSync(path, "utf8")
      .split("\n")
      .forEach((line, i) => {
        const at = `${relative(REPO_ROOT, path)}:${i + 1}`;
        if (OUTSIDE.test(line)) found.outside.push(`${at}: ${line.trim()}`);
        for (const m of line.matchAll(CITATION)) {
          found.cited++;
          const why = problem(m[1]!, m[2]);
          if (why) found.broken.push(`${at}: ${m[0]}: ${why}`);
        }
      });
  }
  return found;
}

describe("docs anchors", () => {
  it("are made from headings as GitHub makes them, outside code blocks, repeats numbered", () => {
    const md = [
      "# Sluice",
      "## Store and previous_response_id",
      "### `server.cors.origins` (default `[\"*\"]`)",
      "## The `sluice` command",
      "## Errors",
      "```toml",
      "# request_max_retries = 4",
      "```",
      "## Errors",
      "### Share-link uids ##",
      "## [Linked](other.md) heading",
    ].join("\n");
    expect([...headingAnchors(md)]).toEqual([
      "sluice",
      "store-and-previous_response_id",
      "servercorsorigins-default-",
      "the-sluice-command",
      "errors",
      "errors-1",
      "share-link-uids",
      "linked-heading",
    ]);
  });

  it("finds a cited section that is missing", () => {
    expect(problem("api.md", "#errors")).toBeUndefined();
    expect(problem("api.md", "#no-such-section")).toBe("docs/api.md has no heading #no-such-section");
    expect(problem("config.md", "#server")).toBe("docs/config.md does not exist");
  });
});

describe("docs citations", () => {
  it.each([
    ["src", 50],
    ["test", 50],
  ])("every docs/<file>.md#<anchor> cited in %s/ names a heading of that page", (folder, over) => {
    const { cited, broken } = citationsUnder(folder);
    expect(cited).toBeGreaterThan(over);
    expect(broken).toEqual([]);
  });

  it.each(["src", "test"])("no comment in %s/ cites a document outside the repository", (folder) => {
    expect(citationsUnder(folder).outside).toEqual([]);
  });

  it("every link of the README and the docs pages to a docs page names a heading of it", () => {
    const pages = [join(REPO_ROOT, "README.md"), ...filesUnder(DOCS, /\.md$/)];
    const broken: string[] = [];
    for (const path of pages) {
      const inDocs = path.startsWith(DOCS);
      for (const m of readFileSync(path, "utf8").matchAll(MD_LINK)) {
        // a link within its own page: `(#anchor)`; to another: `(api.md#x)` from docs/, `(docs/api.md#x)` from the README
        const file = m[3] ? relative(DOCS, path) : m[1]!.replace(/^docs\//, "");
        if (!m[3] && inDocs === m[1]!.startsWith("docs/")) continue; // a path relative to somewhere else
        const why = problem(file, m[3] ?? m[2]);
        if (why) broken.push(`${relative(REPO_ROOT, path)}: ${m[0]}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
