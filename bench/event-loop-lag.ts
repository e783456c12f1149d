// The event-loop lag line (issue "Hardening"): Sluice's own p99 and max event-loop delay while it
// serves the non-stream load and, once a second, one 2 MB request whose message is a single word —
// the input that used to stall token counting for tens of seconds. Read from the gateway's own
// `nodejs_eventloop_lag_*` gauges (prom-client resets its histogram at each scrape, so the scrape
// before the load starts the window).
import { request } from "undici";
import { CONNECTIONS, runLoad } from "./autocannon-case.js";
import { CHAT_HEADERS, CHAT_PATH, chatBody } from "./chat-request.js";
import { MODELS } from "./models.js";

export interface LagResult {
  p99Ms: number;
  maxMs: number;
  /** status codes of the 2 MB requests (a 400 context_length_exceeded is the expected answer) */
  bigStatuses: number[];
}

const BIG_BYTES = 2 * 1024 * 1024 - 4096;

export async function measureEventLoopLag(origin: string, seconds: number, pid: number): Promise<LagResult> {
  const big = JSON.stringify({ model: MODELS.chat, messages: [{ role: "user", content: "a".repeat(BIG_BYTES) }] });
  await scrape(origin);
  const bigStatuses: number[] = [];
  const sending: Array<Promise<void>> = [];
  const timer = setInterval(() => sending.push(sendBig(origin, big).then((s) => void bigStatuses.push(s))), 1000);
  const body = chatBody(false);
  try {
    await runLoad({ origin, path: CHAT_PATH, headers: CHAT_HEADERS, body: () => body, connections: CONNECTIONS }, seconds, { target: pid });
  } finally {
    clearInterval(timer);
  }
  await Promise.all(sending);
  const text = await scrape(origin);
  return { p99Ms: gauge(text, "nodejs_eventloop_lag_p99_seconds") * 1000, maxMs: gauge(text, "nodejs_eventloop_lag_max_seconds") * 1000, bigStatuses };
}

async function sendBig(origin: string, body: string): Promise<number> {
  const res = await request(origin + CHAT_PATH, { method: "POST", headers: CHAT_HEADERS, body });
  await res.body.text();
  return res.statusCode;
}

async function scrape(origin: string): Promise<string> {
  const res = await request(`${origin}/metrics`);
  return res.body.text();
}

function gauge(text: string, name: string): number {
  const match = new RegExp(`^${name} ([0-9.eE+-]+)$`, "m").exec(text);
  return match ? Number(match[1]) : Number.NaN;
}
