// The real gateway (test/support/gateway.ts) in front of a scripted Chat Completions model server
// (test/support/scripted-upstream.ts), configured as a newcomer would for Codex and the Agents SDK
// (docs/codex.md): one private model, the OpenAI model names clients send aliased to it, two apps
// with a key each. The store records every usage row it writes, so a test can await a request's row.
import { createStore } from "../../src/store/index.js";
import type { Store, UsageRow } from "../../src/store/types.js";
import { startGateway, type StartedGateway } from "./gateway.js";
import { startScriptedUpstream, type ModelScript, type ScriptedUpstream } from "./scripted-upstream.js";

export const MODEL = "qwen3-coder";
export const APP_KEY = "sk-responses-coder-0001";
export const OTHER_KEY = "sk-responses-other-0001";
export const CHANNEL_KEY = "vllm-channel-key-0001";

/** The gateway config: `extra` replaces or adds top-level sections; `model` is merged into the model. */
export function responsesConfig(upstreamUrl: string, opts: { extra?: Record<string, unknown>; model?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    channels: [{ name: "vllm", baseUrl: upstreamUrl, key: CHANNEL_KEY, models: [MODEL] }],
    // Codex's own prompt and tools are ~9k tokens before the user's first word
    llmModels: [{ model: MODEL, maxContext: 128_000, maxResponse: 8_000, inputPrice: 1, outputPrice: 2, ...opts.model }],
    aliases: { "gpt-*": MODEL, "made-up-model": MODEL },
    apps: [
      { id: "coder", model: MODEL, models: [MODEL] },
      { id: "other", model: MODEL },
    ],
    apiKeys: [
      { name: "coder-key", kind: "app", appId: "coder", key: APP_KEY },
      { name: "other-key", kind: "app", appId: "other", key: OTHER_KEY },
    ],
    ...opts.extra,
  };
}

export interface UsageRecorder {
  readonly rows: UsageRow[];
  /** resolves with the `n`th row written (0-based), now or once it is */
  row(n: number): Promise<UsageRow>;
}

/** `store` with its usage rows recorded as they are written (after the store has them). */
export function recordingUsage(store: Store): { store: Store; usage: UsageRecorder } {
  const rows: UsageRow[] = [];
  const waiting: Array<{ n: number; resolve: (row: UsageRow) => void }> = [];
  const recorded: Store = Object.create(store) as Store;
  recorded.recordUsage = async (row, scopes) => {
    await store.recordUsage(row, scopes);
    rows.push(row);
    for (const w of waiting.filter((w) => w.n < rows.length)) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(rows[w.n]!);
    }
  };
  const row = (n: number) => (n < rows.length ? Promise.resolve(rows[n]!) : new Promise<UsageRow>((resolve) => waiting.push({ n, resolve })));
  return { store: recorded, usage: { rows, row } };
}

export interface ResponsesGateway {
  gw: StartedGateway;
  upstream: ScriptedUpstream;
  usage: UsageRecorder;
  /** http://127.0.0.1:PORT/v1 */
  baseURL: string;
  /** the script the upstream plays from now on */
  play(script: ModelScript): void;
  close(): Promise<void>;
}

/** Starts the scripted upstream and a gateway before it (on `store` when given, else in memory). */
export async function startResponsesGateway(opts: { store?: Store; extra?: Record<string, unknown>; model?: Record<string, unknown> } = {}): Promise<ResponsesGateway> {
  let script: ModelScript = () => ({ chunks: [], finishReason: "stop" });
  const upstream = await startScriptedUpstream((req, n) => script(req, n));
  const base = opts.store ?? createStore({ driver: "memory" });
  const { store, usage } = recordingUsage(base);
  const gw = await startGateway(responsesConfig(upstream.url, opts), { store });
  return {
    gw,
    upstream,
    usage,
    baseURL: `${gw.url}/v1`,
    play: (next) => void (script = next),
    async close() {
      await gw.close();
      await upstream.close();
      if (!opts.store) await base.close();
    },
  };
}
