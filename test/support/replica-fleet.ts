// Routing tests' fleet (docs/routing.md): four test upstreams as the replicas of one model, a
// gateway config for them, a way to tell which replica served a request, and a small server of
// engine /metrics texts (per replica: a text, garbage, a huge text, or no answer at all).
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { startUpstream, type Upstream } from "./upstream.js";

export const KEY = "sk-routing-app-key-0001";
export const MODEL = "m1";

export function fleetConfig(replicas: Upstream[], opts: { channel?: (i: number) => Record<string, unknown>; extra?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    channels: replicas.map((r, i) => ({ name: `r${i + 1}`, baseUrl: r.url, models: [MODEL], healthCheck: { intervalMs: 0 }, ...opts.channel?.(i) })),
    llmModels: [{ model: MODEL, maxContext: 100_000, maxResponse: 100 }],
    apps: [{ id: "a1", model: MODEL }],
    apiKeys: [{ name: "k1", kind: "app", appId: "a1", key: KEY }],
    shareLinks: [{ shareId: "pub", appId: "a1", apiQpm: 0 }],
    ...opts.extra,
  };
}

export async function startReplicas(count = 4): Promise<Upstream[]> {
  return Promise.all(Array.from({ length: count }, () => startUpstream()));
}

/** The replicas (indexes) that got a chat request while `send` ran; every replica's record cleared first. */
export async function servedBy(replicas: Upstream[], send: () => Promise<Response>): Promise<number[]> {
  for (const r of replicas) r.requests.length = 0;
  const res = await send();
  const text = await res.text();
  if (res.status !== 200) throw new Error(`answered ${res.status}: ${text}`);
  return replicas.flatMap((r, i) => (r.requests.length > 0 ? [i] : []));
}

/** The one replica that served `send`. */
export async function replicaOf(replicas: Upstream[], send: () => Promise<Response>): Promise<number> {
  const served = await servedBy(replicas, send);
  if (served.length !== 1) throw new Error(`served by ${served.length} replicas`);
  return served[0]!;
}

export function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url + path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, ...headers }, body: JSON.stringify(body) });
}

export const vllmText = (waiting: number, running = 0, kv = 0) =>
  `# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name="m1"} ${waiting}\nvllm:num_requests_running{model_name="m1"} ${running}\nvllm:kv_cache_usage_perc{model_name="m1"} ${kv}\n`;

export type MetricsAnswer = { text: string } | { hang: true };

export interface EngineMetricsServer {
  url: string;
  /** what GET /r<N> answers from now on */
  set(replica: number, answer: MetricsAnswer): void;
  /** resolves once `count` more scrapes of the replica's path were answered (or left hanging) */
  scrapes(replica: number, count: number): Promise<void>;
  close(): Promise<void>;
}

export async function startEngineMetrics(): Promise<EngineMetricsServer> {
  const answers = new Map<number, MetricsAnswer>();
  const counts = new Map<number, number>();
  const waiters: Array<{ replica: number; at: number; done: () => void }> = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    req.resume();
    const replica = Number(/^\/r(\d+)$/.exec(req.url ?? "")?.[1]);
    const count = (counts.get(replica) ?? 0) + 1;
    counts.set(replica, count);
    for (const w of waiters.filter((w) => w.replica === replica && count >= w.at)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.done();
    }
    const answer = answers.get(replica) ?? { text: vllmText(0) };
    if ("hang" in answer) return void hanging.add(res);
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(answer.text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (replica, answer) => answers.set(replica, answer),
    scrapes: (replica, count) => new Promise<void>((done) => waiters.push({ replica, at: (counts.get(replica) ?? 0) + count, done })),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
