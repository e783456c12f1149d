// A raw config for core tests: one upstream channel, an echo channel, two models, an app key,
// a global key, and a sha256 key. Override any section by passing it.
import { createHash } from "node:crypto";

export const APP_KEY = "sk-core-app-key-0001";
export const GLOBAL_KEY = "sk-core-global-key-0001";
export const HASHED_KEY = "sk-core-hashed-key-0001";
export const CHANNEL_KEY = "channel-secret-key-0001";

export function coreConfig(upstreamUrl: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    channels: [
      { name: "up", baseUrl: upstreamUrl, key: CHANNEL_KEY, models: ["m1", "m-vision"] },
      { name: "demo", type: "echo", models: ["echo"] },
    ],
    llmModels: [
      { model: "m1", name: "Model One", maxContext: 4000, maxResponse: 1000, maxTemperature: 1, defaultSystemChatPrompt: "Be brief." },
      { model: "m-vision", maxContext: 4000, maxResponse: 1000, vision: true },
      { model: "echo", maxContext: 4000, maxResponse: 1000 },
    ],
    apps: [
      { id: "a1", model: "m1", models: ["m1", "echo", "m-vision"] },
      { id: "a2", model: "echo" },
    ],
    apiKeys: [
      { name: "app-one", kind: "app", appId: "a1", key: APP_KEY },
      { name: "ops", kind: "global", key: GLOBAL_KEY },
      { name: "hashed", kind: "app", appId: "a2", sha256: createHash("sha256").update(HASHED_KEY).digest("hex") },
    ],
    ...overrides,
  };
}

export function chat(url: string, body: unknown, key: string | null = APP_KEY, path = "/v1/chat/completions"): Promise<Response> {
  return fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export const userMessage = (content: string) => ({ role: "user", content });
