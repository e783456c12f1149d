// `npm run bench -- --heap-profile [case]`: what of Sluice's allocations under one load reached the
// old generation (freed by a major collection, or still alive), summed by the innermost frame of
// Sluice's own code that made it and the two frames that called it: where an object outlives the
// request that made it, and costs a mark-compact to free (docs/performance.md#large-bodies-and-the-old-generation).

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

export interface HeapSummary {
  /** bytes sampled in all */
  bytes: number;
  sites: Array<{ site: string; bytes: number }>;
}

/** A frame as `name file:line`, the file shortened to dist/…, a package's path or node:…. */
function frame(f: SamplingNode["callFrame"]): string {
  const file = f.url.replace(/^file:\/\//, "").replace(/.*\/(dist|node_modules)\//, "$1/");
  return `${f.functionName || "(anonymous)"}${file ? ` ${file}:${f.lineNumber + 1}` : ""}`;
}

export function summariseHeap(head: SamplingNode, top = 25): HeapSummary {
  const bySite = new Map<string, number>();
  let bytes = 0;
  const stack: string[] = [];
  const walk = (node: SamplingNode) => {
    stack.push(frame(node.callFrame));
    if (node.selfSize > 0) {
      bytes += node.selfSize;
      const ours = stack.findLastIndex((s) => s.includes("dist/"));
      const site =
        ours < 0
          ? `(no frame of Sluice's) ${stack.slice(-2).join(" < ")}`
          : stack.slice(Math.max(0, ours - 2), ours + 1).reverse().join(" < ") + (ours < stack.length - 1 ? `  >> ${stack.at(-1)}` : "");
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child);
    stack.pop();
  };
  walk(head);
  const sites = [...bySite].map(([site, b]) => ({ site, bytes: b })).sort((a, b) => b.bytes - a.bytes).slice(0, top);
  return { bytes, sites };
}
