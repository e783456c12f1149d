// The bench's `tracing` section (docs/tracing.md#cost): the 20-chunk streamed chat load against
// three Sluices on the same test upstream, interleaved by round: no `tracing` block (tracing off, no
// provider); a block with sampleRatio 0 (a provider whose every new trace is unsampled: no span is
// exported, the context still goes upstream); sampleRatio 1 (every request sampled and exported).
// Their collector is an OTLP/HTTP sink in its own process (bench/otlp-sink-process.ts). Reported:
// Sluice's CPU per request of each and its ratio to the first, and, from each Sluice's /metrics at
// the end, the spans it exported and dropped — that the spans really went out.
import { CHAT_PATH, chatBody } from "./chat-request.js";
import { measureGroup, type CaseResult, type GroupTiming, type LoadCase } from "./interleave.js";
import { spec } from "./loads.js";
import { spawnNodeServer, type NodeServer } from "./node-process.js";
import { startSluice, type SluiceProcess } from "./sluice-process.js";

/** The section's Sluices: a name and the `tracing` block (none for the first). */
const CONFIGS: Array<{ name: string; tracing?: (endpoint: string) => Record<string, unknown> }> = [
  { name: "tracing absent" },
  { name: "tracing sampleRatio 0", tracing: (endpoint) => ({ endpoint, sampleRatio: 0 }) },
  { name: "tracing sampleRatio 1", tracing: (endpoint) => ({ endpoint, sampleRatio: 1 }) },
];
/** the batch processor's default export delay (OTEL_BSP_SCHEDULE_DELAY) */
const DEFAULT_SCHEDULE_DELAY_MS = 5_000;
const SETTLE_POLL_MS = 250;

export interface TracingSpans {
  name: string;
  /** requests Sluice finished (sluice_requests_total), warm-up included */
  requests: number;
  exported: number;
  dropped: number;
}

export interface TracingResult {
  spans: TracingSpans[];
  /** what the sink took: OTLP posts and their bytes */
  sink: { posts: number; bytes: number };
}

/** Runs the section; the group's cases go to `groups`, the span counts are returned. */
export async function measureTracing(upstreamUrl: string, timing: GroupTiming, outDir: string): Promise<{ cases: CaseResult[]; result: TracingResult }> {
  if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    throw new Error("OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set: the Sluice without a tracing block would trace too");
  }
  const sink = await spawnNodeServer("OTLP sink", { args: [`${outDir}/otlp-sink-process.js`], readyPath: "/stats", ready: (s) => s === 200 });
  const sluices: SluiceProcess[] = [];
  try {
    for (const c of CONFIGS) sluices.push(await startSluice(upstreamUrl, { tracing: c.tracing?.(sink.url) }));
    const body = chatBody(true);
    const cases: LoadCase[] = sluices.map((s, i) => ({ name: CONFIGS[i]!.name, target: "sluice", spec: spec(s.url, body, { path: CHAT_PATH }), pid: s.pid }));
    const results = await measureGroup("tracing (20-chunk streams): absent, sampleRatio 0, sampleRatio 1", cases, timing);
    const spans = await Promise.all(sluices.map(async (s, i) => ({ name: CONFIGS[i]!.name, ...(await settledCounts(s.url)) })));
    return { cases: results, result: { spans, sink: await sinkStats(sink) } };
  } finally {
    await Promise.all([...sluices.map((s) => s.stop()), sink.stop()]);
  }
}

/** The span counters once no export is pending: unchanged for longer than the batch processor
 *  waits before it exports what it holds. */
async function settledCounts(url: string): Promise<Omit<TracingSpans, "name">> {
  const delay = Number(process.env.OTEL_BSP_SCHEDULE_DELAY) || DEFAULT_SCHEDULE_DELAY_MS;
  let last = await counts(url);
  let stableSince = Date.now();
  while (Date.now() - stableSince < delay + 1_000) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    const now = await counts(url);
    if (now.exported !== last.exported || now.dropped !== last.dropped) stableSince = Date.now();
    last = now;
  }
  return last;
}

async function counts(url: string): Promise<Omit<TracingSpans, "name">> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return { requests: sumOf(text, "sluice_requests_total"), exported: sumOf(text, "sluice_trace_spans_exported_total"), dropped: sumOf(text, "sluice_trace_spans_dropped_total") };
}

/** The sum of a counter's samples, every label set, in Prometheus text. */
function sumOf(text: string, name: string): number {
  const sample = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm");
  let total = 0;
  for (const m of text.matchAll(sample)) total += Number(m[1]);
  return total;
}

async function sinkStats(sink: NodeServer): Promise<TracingResult["sink"]> {
  return (await (await fetch(`${sink.url}/stats`)).json()) as TracingResult["sink"];
}

/** The section's lines for the report. */
export function tracingLines(r: TracingResult): string[] {
  const row = (s: TracingSpans) =>
    `  ${s.name.padEnd(22)} ${s.requests} requests, ${s.exported} spans exported (${s.requests ? (s.exported / s.requests).toFixed(2) : "-"} a request), ${s.dropped} dropped`;
  return [`tracing: spans by Sluice's /metrics at the end (warm-up included); the sink took ${r.sink.posts} OTLP posts, ${(r.sink.bytes / 1e6).toFixed(1)} MB`, ...r.spans.map(row)];
}
