// docs/tracing-waterfall.svg (docs/tracing.md#a-turns-waterfall): one streamed chat turn's trace from
// a real run. Two simulated vLLM replicas (bench/fleet/replica.ts, each its own process) behind a
// Sluice (the built dist/main.js) with tracing to an OTLP/HTTP receiver in this process
// (test/support/otlp-receiver.ts). An agent's first turn puts its long system prompt on a replica;
// its second turn, which resends that prompt, goes out with this script's own `traceparent`, so
// Sluice continues the script's trace; that trace's spans, and the script's own span of the turn
// (timed here, drawn on top), become one bar each: indented by depth, a tick at gen_ai.first_token.
// Usage: npx tsx scripts/trace-waterfall.ts [out.svg]
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { KEY, MODEL, startFleetSluice, words } from "../bench/fleet/bench.js";
import { startReplicas } from "../bench/fleet/replicas.js";
import { startOtlpReceiver, type ReceivedSpan } from "../test/support/otlp-receiver.js";

const OUT = process.argv[2] ?? "docs/tracing-waterfall.svg";
const REPLICAS = 2;
/** an agent's system prompt and tools, ~12K tokens (4 characters a token), and its task */
const SYSTEM_CHARS = 48_000;
const TASK_CHARS = 8_000;
const ANSWER_TOKENS = 24;
const CLIENT_SPAN = "client: chat turn (this script)";

interface Bar {
  name: string;
  depth: number;
  startMs: number;
  endMs: number;
  /** event ticks: name and epoch ms */
  ticks: Array<{ name: string; timeMs: number }>;
  note: string;
}

/** Attributes shown under a span's bar, when it has them. */
const SHOWN = ["http.response.status_code", "sluice.app.id", "sluice.channel", "sluice.route.decision", "gen_ai.usage.input_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.output_tokens", "sluice.priority"];

async function main(): Promise<void> {
  execFileSync(process.execPath, ["scripts/build.mjs", "--if-changed"], { stdio: "inherit" });
  process.env.OTEL_BSP_SCHEDULE_DELAY = "100"; // Sluice inherits it: spans go out at once
  const receiver = await startOtlpReceiver();
  const replicas = await startReplicas(REPLICAS, {});
  const sluice = await startFleetSluice(replicas, {}, { tracing: { endpoint: receiver.url, serviceName: "sluice" } }).catch(async (err: unknown) => {
    await Promise.all(replicas.map((r) => r.stop()));
    throw err;
  });
  try {
    const system = `You are a coding agent. ${words("agent-rules", SYSTEM_CHARS)}`;
    const messages = [{ role: "system", content: system }, { role: "user", content: `task: ${words("task", TASK_CHARS)}` }];
    const first = await turn(sluice.url, messages); // puts the prompt in one replica's cache
    messages.push({ role: "assistant", content: first.text }, { role: "user", content: `tool result: ${words("tool", 2_000)}` });
    const traceId = randomBytes(16).toString("hex");
    const spanId = randomBytes(8).toString("hex");
    const second = await turn(sluice.url, messages, `00-${traceId}-${spanId}-01`);
    await receiver.waitFor((spans) => spans.some((s) => s.traceId === traceId && s.parentSpanId === spanId), 15_000);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the children end first, the server span last: all in
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    const client: Bar = { name: CLIENT_SPAN, depth: 0, startMs: second.startMs, endMs: second.endMs, ticks: second.firstMs ? [{ name: "first chunk", timeMs: second.firstMs }] : [], note: `traceparent 00-${traceId.slice(0, 8)}…-${spanId.slice(0, 6)}…-01` };
    const bars = [client, ...tree(spans, spanId, 1)];
    const svg = render(bars, `One streamed chat turn through Sluice to a simulated vLLM replica (${REPLICAS} replicas)`, `${messages.length} messages, ~${Math.round((SYSTEM_CHARS + TASK_CHARS) / 4 / 1000)}K-token shared prefix; trace ${traceId}; npx tsx scripts/trace-waterfall.ts, ${new Date().toISOString().slice(0, 10)}`);
    await writeFile(OUT, svg);
    console.log(`${OUT}: ${bars.length} spans\n${bars.map((b) => `${"  ".repeat(b.depth)}${b.name} ${(b.endMs - b.startMs).toFixed(0)} ms ${b.note}`).join("\n")}`);
  } finally {
    await sluice.stop();
    await sluice.cleanup();
    await Promise.all(replicas.map((r) => r.stop()));
    await receiver.close();
  }
}

/** One streamed chat request; epoch ms of its start, its first content chunk and its end. */
async function turn(url: string, messages: Array<{ role: string; content: string }>, traceparent?: string) {
  const startMs = performance.timeOrigin + performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, ...(traceparent ? { traceparent } : {}) },
    body: JSON.stringify({ model: MODEL, stream: true, max_tokens: ANSWER_TOKENS, messages }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`Sluice answered ${res.status}: ${await res.text()}`);
  let text = "";
  let firstMs: number | undefined;
  const decoder = new TextDecoder();
  for await (const part of res.body) {
    const chunk = decoder.decode(part as Uint8Array, { stream: true });
    if (firstMs === undefined && chunk.includes('"content"')) firstMs = performance.timeOrigin + performance.now();
    text += chunk;
  }
  return { startMs, firstMs, endMs: performance.timeOrigin + performance.now(), text: `answer of ${text.length} bytes` };
}

/** The spans under `parent`, depth first, each in start order. */
function tree(spans: ReceivedSpan[], parent: string, depth: number): Bar[] {
  return spans
    .filter((s) => s.parentSpanId === parent)
    .sort((a, b) => a.startMs - b.startMs)
    .flatMap((s) => {
      const note = SHOWN.filter((k) => s.attributes[k] !== undefined).map((k) => `${k}=${String(s.attributes[k])}`).join("  ");
      const bar: Bar = { name: s.name, depth, startMs: s.startMs, endMs: s.endMs, ticks: s.events.map((e) => ({ name: e.name, timeMs: e.timeMs })), note };
      return [bar, ...tree(spans, s.spanId, depth + 1)];
    });
}

const WIDTH = 1000;
const LABEL_W = 300;
const PLOT_X = LABEL_W + 10;
const PLOT_W = WIDTH - PLOT_X - 30;
const TOP = 64;
const ROW = 70;
const BAR_H = 16;
/** characters of a 10 px note line in the label column */
const NOTE_CHARS = 56;
const COLORS = ["#6b7280", "#2563eb", "#059669", "#d97706", "#7c3aed"];

function render(bars: Bar[], title: string, subtitle: string): string {
  const t0 = Math.min(...bars.map((b) => b.startMs));
  const span = Math.max(1, Math.max(...bars.map((b) => b.endMs)) - t0);
  const x = (ms: number) => PLOT_X + ((ms - t0) / span) * PLOT_W;
  const axisY = TOP + bars.length * ROW + 8;
  const height = axisY + 40;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="ui-sans-serif, system-ui, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="600" fill="#111827">${esc(title)}</text>`,
    `<text x="12" y="42" fill="#6b7280">${esc(subtitle)}</text>`,
  ];
  const step = niceStep(span);
  for (let ms = 0; ms <= span + 0.001; ms += step) {
    const gx = x(t0 + ms).toFixed(1);
    out.push(`<line x1="${gx}" y1="${TOP - 6}" x2="${gx}" y2="${axisY}" stroke="#e5e7eb"/>`, `<text x="${gx}" y="${axisY + 16}" text-anchor="middle" fill="#374151">${ms} ms</text>`);
  }
  out.push(`<line x1="${PLOT_X}" y1="${axisY}" x2="${PLOT_X + PLOT_W}" y2="${axisY}" stroke="#9ca3af"/>`);
  bars.forEach((b, i) => {
    const y = TOP + i * ROW;
    const bx = x(b.startMs);
    const bw = Math.max(2, x(b.endMs) - bx);
    const color = COLORS[b.depth % COLORS.length]!;
    const duration = `${(b.endMs - b.startMs).toFixed(0)} ms`;
    out.push(`<text x="${12 + b.depth * 16}" y="${y + 13}" fill="#111827">${esc(b.name)}</text>`);
    out.push(`<rect x="${bx.toFixed(1)}" y="${y}" width="${bw.toFixed(1)}" height="${BAR_H}" rx="3" fill="${color}"/>`);
    const inside = bw > 70;
    out.push(`<text x="${(inside ? bx + 6 : bx + bw + 6).toFixed(1)}" y="${y + 12}" fill="${inside ? "#ffffff" : "#111827"}">${duration}</text>`);
    for (const tick of b.ticks) {
      const tx = x(tick.timeMs).toFixed(1);
      const at = `${tick.name} +${(tick.timeMs - b.startMs).toFixed(0)} ms`;
      out.push(`<line x1="${tx}" y1="${y - 3}" x2="${tx}" y2="${y + BAR_H + 3}" stroke="#dc2626" stroke-width="2"/>`, `<text x="${tx}" y="${y + BAR_H + 14}" fill="#dc2626" font-size="11">${esc(at)}</text>`);
    }
    wrap(b.note, NOTE_CHARS - b.depth * 3).forEach((line, n) => out.push(`<text x="${12 + b.depth * 16}" y="${y + 27 + n * 12}" fill="#6b7280" font-size="10">${esc(line)}</text>`));
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

/** An axis step of 1, 2 or 5 × 10^n ms giving at most ~10 ticks. */
function niceStep(spanMs: number): number {
  const raw = spanMs / 10;
  const pow = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw)!;
}

/** The note's `k=v` pairs in lines of at most `chars`, four lines at most (the row's room). */
function wrap(note: string, chars: number): string[] {
  const lines: string[] = [];
  for (const pair of note ? note.split("  ") : []) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + 2 + pair.length <= chars) lines[last] += `  ${pair}`;
    else lines.push(pair);
  }
  return lines.length > 4 ? [...lines.slice(0, 3), `${lines[3]!.slice(0, chars - 1)}…`] : lines;
}
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
