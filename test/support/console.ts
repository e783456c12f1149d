// A gateway for the console's tests and screenshots (docs/console.md): two channels on one real
// upstream, a model named like markup, an app that keeps its calls' bodies, admin and app keys, and
// usage made by real calls through the gateway.
import { parseConfig } from "../../src/config/load.js";
import { startGateway, type StartedGateway } from "./gateway.js";
import { startUpstream, type Upstream } from "./upstream.js";

export const ADMIN_KEY = "sk-console-admin-key-0001";
/** an admin key a reload takes away (a key revoked mid-session) */
export const DOOMED_ADMIN_KEY = "sk-console-admin-key-doomed-0002";
export const APP_KEY = "sk-console-app-key-0003";
export const OTHER_APP_KEY = "sk-console-app-key-other-0004";
export const CHANNEL_KEY = "channel-key-console-0005";
/** a model name and a user id that would run script if set as HTML */
export const MARKUP = "<img src=x onerror=alert(1)>";
/** a secret a caller pasted into a message: stored redacted */
export const PASTED_SECRET = "sk-live-0123456789abcdefghijklmn";

export interface ConsoleGateway {
  gw: StartedGateway;
  upstream: Upstream;
  /** whether the model named like markup is configured and called */
  markup: boolean;
  /** a chat call through the gateway */
  chat(model: string, opts?: { key?: string; user?: string; content?: string }): Promise<Response>;
  /** an admin API call with ADMIN_KEY */
  admin<T>(path: string, init?: RequestInit): Promise<T>;
  /** reload config.json without DOOMED_ADMIN_KEY */
  dropDoomedKey(): Promise<void>;
  close(): Promise<void>;
}

function rawConfig(upstreamUrl: string, withDoomed: boolean, markup: boolean): Record<string, unknown> {
  const marked = (models: string[]) => (markup ? [...models, MARKUP] : models);
  const admin = [{ name: "console-admin", kind: "admin", key: ADMIN_KEY }];
  if (withDoomed) admin.push({ name: "console-doomed", kind: "admin", key: DOOMED_ADMIN_KEY });
  return {
    channels: [
      { name: "gpu-a", baseUrl: upstreamUrl, key: CHANNEL_KEY, models: marked(["chat-small"]), healthCheck: { intervalMs: 0 } },
      { name: "gpu-b", baseUrl: upstreamUrl, key: CHANNEL_KEY, models: ["chat-large"], healthCheck: { intervalMs: 0 } },
    ],
    llmModels: [
      { model: "chat-small", maxContext: 8000, maxResponse: 1000, inputPrice: 0.5, outputPrice: 1.5 },
      { model: "chat-large", maxContext: 8000, maxResponse: 1000, inputPrice: 2, outputPrice: 6 },
      ...(markup ? [{ model: MARKUP, maxContext: 8000, maxResponse: 1000, inputPrice: 1, outputPrice: 1 }] : []),
    ],
    apps: [
      { id: "support-bot", model: "chat-small", models: marked(["chat-small", "chat-large"]), logBodies: "all" },
      { id: "research", model: "chat-large", models: ["chat-small", "chat-large"] },
    ],
    apiKeys: [
      ...admin,
      { name: "support", kind: "app", appId: "support-bot", key: APP_KEY, maxUsagePoints: 1000, periodPoints: 100, period: "day" },
      { name: "research-team", kind: "app", appId: "research", key: OTHER_APP_KEY, qpm: 60 },
    ],
    routing: { maxAttempts: 1 },
    store: { driver: "memory" },
  };
}

/** `markup: false` (the screenshots): no model named like markup */
export async function startConsoleGateway({ markup = true } = {}): Promise<ConsoleGateway> {
  const upstream = await startUpstream({ usage: { prompt_tokens: 420, completion_tokens: 180, prompt_tokens_details: { cached_tokens: 256 } } });
  let doomed = true;
  const gw = await startGateway(rawConfig(upstream.url, true, markup), { loadConfig: () => parseConfig(rawConfig(upstream.url, doomed, markup), process.env) });
  const auth = (key: string) => ({ authorization: `Bearer ${key}` });
  return {
    gw,
    upstream,
    markup,
    chat: (model, { key = APP_KEY, user, content = "Hello there" } = {}) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth(key) },
        body: JSON.stringify({ model, user, messages: [{ role: "user", content }] }),
      }),
    async admin<T>(path: string, init: RequestInit = {}) {
      const res = await fetch(gw.url + path, { ...init, headers: { ...auth(ADMIN_KEY), ...(init.headers ?? {}) } });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    },
    async dropDoomedKey() {
      doomed = false;
      const res = await fetch(`${gw.url}/api/admin/reload`, { method: "POST", headers: auth(ADMIN_KEY) });
      if (!res.ok) throw new Error(`reload: ${res.status} ${await res.text()}`);
    },
    async close() {
      await gw.close();
      await upstream.close();
    },
  };
}

/** The calls the tests and screenshots look at: eight calls by two keys and four users on three
 *  models (seven, without the model named like markup, for the pictures). */
export async function makeCalls(c: ConsoleGateway): Promise<number> {
  const calls: Array<[string, { key?: string; user?: string; content?: string }]> = [
    ["chat-small", { user: "alice" }],
    ["chat-small", { user: "alice" }],
    ["chat-small", { user: "bob" }],
    ["chat-large", { user: "bob" }],
    ["chat-large", { key: OTHER_APP_KEY, user: "dana" }],
    ["chat-small", { key: OTHER_APP_KEY, user: "dana" }],
    ...(c.markup ? [[MARKUP, { user: MARKUP }] satisfies [string, { user: string }]] : []),
    ["chat-large", { user: "carol", content: `Please use ${APP_KEY} and ${PASTED_SECRET} for the deploy.` }],
  ];
  for (const [model, opts] of calls) {
    const res = await c.chat(model, opts);
    if (res.status !== 200) throw new Error(`${model}: ${res.status} ${await res.text()}`);
  }
  return calls.length;
}
