// The house's structure (docs/architecture.md#layers): no import cycles, between files or between
// folders; every folder imports only the layers below its own; a kind is a spec, not a copy of the
// pipeline: the chat and embeddings specs stay small.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src", import.meta.url));
/** the request kinds: specs of the pipeline, and the dialects */
const KINDS = new Set(["chat", "embeddings", "dialects", "rerank", "audio", "completions"]);
/** where the kinds are put together: the app, its runtime and its route table */
const ASSEMBLY = new Set(["gateway.ts", "runtime.ts", "routes.ts", "dev.ts", "main.ts"]);
/** The folders of src/ from the bottom up: a folder imports only folders of the layers below its
 *  own (the files at the top of src/ put them together and may import any). */
const LAYERS = [
  ["json", "observability", "time", "tracing"],
  ["config"],
  ["http"],
  ["cluster", "store", "tokens", "metrics"],
  ["auth", "upstream", "share", "console"],
  ["aiproxy"],
  ["stream", "admin", "usage", "demo"],
  ["metered"],
  ["chat", "embeddings", "rerank", "audio", "completions", "catalog"],
  ["dialects"],
  ["batches"],
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** Every relative import (type imports too) of every source file, as resolved paths. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(/^(?:import|export)\s[^"';]*?from\s+"(\.[^"]+)"/gm)].map((m) => resolve(dirname(file), m[1]!).replace(/\.js$/, ".ts"));
    graph.set(file, targets);
  }
  return graph;
}

/** The same graph between the folders of src/ (a file at the top of src/ is a node of its own). */
function folderGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    const to = folders.get(from) ?? folders.set(from, new Set()).get(from)!;
    for (const target of targets) if (folderOf(target) !== from) to.add(folderOf(target));
  }
  return new Map([...folders].map(([folder, targets]) => [folder, [...targets]]));
}

const folderOf = (file: string) => relative(SRC, file).split("/")[0]!;

/** The strongly connected components of more than one node (Tarjan), named relative to src/. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w.startsWith(SRC) ? relative(SRC, w) : w);
      if (w === v) break;
    }
    if (component.length > 1) found.push(component);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const lines = (file: string) => readFileSync(join(SRC, file), "utf8").split("\n").length;

describe("the structure of src/", () => {
  const graph = importGraph();

  it("has no import cycles", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("has no import cycles between folders", () => {
    expect(cycles(folderGraph(graph))).toEqual([]);
  });

  it("has every folder import only the layers below its own", () => {
    const layer = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));
    const wrong: string[] = [];
    for (const [from, targets] of folderGraph(graph)) {
      if (from.endsWith(".ts")) continue;
      if (!layer.has(from)) wrong.push(`${from}/ is in no layer`);
      for (const to of targets) if (!((layer.get(to) ?? Infinity) < (layer.get(from) ?? -1))) wrong.push(`${from}/ → ${to}`);
    }
    expect(wrong).toEqual([]);
  });

  it("has no import from a lower layer into a request kind", () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = relative(SRC, file);
      if (KINDS.has(from.split("/")[0]!) || ASSEMBLY.has(from)) continue;
      for (const target of targets) if (KINDS.has(relative(SRC, target).split("/")[0]!)) upward.push(`${from} → ${relative(SRC, target)}`);
    }
    expect(upward).toEqual([]);
  });

  it("keeps each kind a spec of the one pipeline: the chat and embeddings specs well under 150 lines", () => {
    expect(lines("chat/spec.ts")).toBeLessThan(100);
    expect(lines("embeddings/spec.ts")).toBeLessThan(100);
    // one pipeline: nothing else reads a body, admits a budget and walks the channels
    const pipelines = [...graph.keys()].filter((f) => /quota\.admit\(/.test(readFileSync(f, "utf8")) && /withFailover\(/.test(readFileSync(f, "utf8")));
    expect(pipelines.map((f) => relative(SRC, f))).toEqual(["metered/request.ts"]);
  });

  it("has the pipeline settle, never a kind: no meter.settle( outside src/metered/", () => {
    const settling = [...graph.keys()].filter((f) => /\bmeter\.settle\(/.test(readFileSync(f, "utf8"))).map((f) => relative(SRC, f));
    expect(settling.filter((f) => !f.startsWith("metered/"))).toEqual([]);
    expect(settling.length).toBeGreaterThan(0);
  });

  it("has no kind read its route from the URL: what a route is (FastGPT's /api/v1/…) is the route table's", () => {
    // before: chat/reasoning.ts read `url.pathname.startsWith("/api/v1/")`
    const reading = [...graph.keys()]
      .filter((f) => KINDS.has(relative(SRC, f).split("/")[0]!) && /url\.pathname|"\/api\/v1\//.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f));
    expect(reading).toEqual([]);
  });

  it("has upstream/ and http/ import no request kind", () => {
    const importing = [...graph].flatMap(([file, targets]) => {
      const from = relative(SRC, file).split("/")[0]!;
      if (from !== "upstream" && from !== "http") return [];
      return targets.filter((t) => KINDS.has(relative(SRC, t).split("/")[0]!)).map((t) => `${relative(SRC, file)} → ${relative(SRC, t)}`);
    });
    expect(importing).toEqual([]);
  });

  it("has aiproxy/ (FastGPT's AI Proxy API) imported only by the route table and the runtime that builds its handlers", () => {
    // before: the channel book lived in aiproxy/ and gateway.ts and admin/routes.ts imported it
    const importers = new Set<string>();
    for (const [file, targets] of graph) {
      const from = relative(SRC, file);
      if (from.startsWith("aiproxy/")) continue;
      if (targets.some((t) => relative(SRC, t).startsWith("aiproxy/"))) importers.add(from);
    }
    expect([...importers].sort()).toEqual(["routes.ts", "runtime.ts"]);
  });

  it("has no handler authenticate by itself: the route table's access (auth/access.ts) and the pipeline's first step do", () => {
    // before: ~21 authenticate calls inside handlers (admin/, aiproxy/, catalog/, usage/, dialects/responses/)
    const authenticating = [...graph.keys()]
      .filter((f) => /keyring\.authenticate(Fresh)?\(/.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f))
      .filter((f) => !f.startsWith("auth/"));
    expect(authenticating).toEqual(["metered/request.ts"]);
  });

  it("has no answer written by patching a response: no assignment to a response's write or end", () => {
    const patching = [...graph.keys()].filter((f) => /\.(write|end) =[^=]/.test(readFileSync(f, "utf8"))).map((f) => relative(SRC, f));
    expect(patching).toEqual([]);
  });

  it("keeps runMetered a numbered list of the request's steps, under 50 lines", () => {
    const text = readFileSync(join(SRC, "metered/pipeline.ts"), "utf8").split("\n");
    const start = text.findIndex((l) => l.startsWith("export async function runMetered"));
    const end = text.findIndex((l, i) => i > start && l === "}");
    expect(start).toBeGreaterThan(0);
    expect(end - start + 1).toBeLessThanOrEqual(50);
  });
});
