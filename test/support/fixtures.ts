// Shared fixtures for the conversation, detail, budget, usage and durability tests: a raw config
// (docs/configuration.md#top-level) with two priced models and two apps, its keys, a gateway + upstream per
// test, and helpers that post chats and read OpenAI error bodies.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import { chat, userMessage } from "./core-config.js";
import { startGateway, type StartedGateway } from "./gateway.js";
import { startUpstream, type Upstream } from "./upstream.js";

export const APP_KEY = "sk-test-app-key-1";
export const APP2_KEY = "sk-test-app-key-2";
export const GLOBAL_KEY = "sk-test-global-key";

export interface ConfigParts {
  /** more fields merged into the app "a1" */
  app?: Record<string, unknown>;
  /** more fields merged into the key "k1" (the app key of "a1") */
  key?: Record<string, unknown>;
  /** a SQLite file instead of the in-memory store */
  sqlitePath?: string;
  /** anything else at the top level (server, …) */
  extra?: Record<string, unknown>;
}

/**
 * Two models (m1 priced per token in all, m2 priced per input and output token), two apps (a1 may use
 * both, a2 only m1), an app key for each and one global key.
 */
export function gatewayConfig(upstreamUrl: string, parts: ConfigParts = {}): Record<string, unknown> {
  return {
    channels: [{ name: "up", baseUrl: upstreamUrl, key: "channel-key-123", models: ["m1", "m2"] }],
    llmModels: [
      { model: "m1", name: "Model One", maxContext: 4000, maxResponse: 1000, charsPointsPrice: 2 },
      { model: "m2", name: "Model Two", maxContext: 4000, maxResponse: 1000, inputPrice: 3, outputPrice: 5 },
    ],
    apps: [
      { id: "a1", model: "m1", models: ["m1", "m2"], history: 2, ...parts.app },
      { id: "a2", model: "m1", history: 2 },
    ],
    apiKeys: [
      { name: "k1", kind: "app", appId: "a1", key: APP_KEY, ...parts.key },
      { name: "k2", kind: "app", appId: "a2", key: APP2_KEY },
      { name: "ops", kind: "global", key: GLOBAL_KEY },
    ],
    ...(parts.sqlitePath ? { store: { driver: "sqlite", path: parts.sqlitePath } } : {}),
    ...parts.extra,
  };
}

/** A temporary folder for the enclosing describe block (or file), removed after it; `file()` names a path in it. */
export function useTempDir(prefix: string): { file(name: string): string } {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return { file: (name) => join(dir, name) };
}

export const user = userMessage;

/** POST /v1/chat/completions with an app key (APP_KEY unless given; null sends none). */
export const postChat = (baseUrl: string, body: Record<string, unknown>, key: string | null = APP_KEY) => chat(baseUrl, body, key);

export interface Harness {
  upstream: Upstream;
  gw: StartedGateway;
}

/**
 * One test upstream for the file and a fresh gateway (in-memory store) on it for each test; the
 * upstream's behaviour and records are reset after each test. Read the fields inside tests only.
 */
export function useGatewayAndUpstream(parts: ConfigParts = {}): Harness {
  const h = {} as Harness;
  beforeAll(async () => {
    h.upstream = await startUpstream();
  });
  afterAll(() => h.upstream.close());
  beforeEach(async () => {
    h.gw = await startGateway(gatewayConfig(h.upstream.url, parts));
  });
  afterEach(async () => {
    await h.gw.close();
    h.upstream.reset();
  });
  return h;
}

export interface Completion {
  id: string;
  choices: Array<{ message: { role: string; content: string }; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  responseData?: unknown[];
}

/** A non-stream chat that must succeed; returns the parsed completion. */
export async function chatOk(baseUrl: string, body: Record<string, unknown>, key: string = APP_KEY): Promise<Completion> {
  const res = await postChat(baseUrl, body, key);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as Completion;
}

export interface ErrorFields {
  message: string;
  type: string;
  code: string;
  param: string | null;
}

/** Asserts the OpenAI error shape with the given status and code; returns the `error` object. */
export async function expectError(res: Response, status: number, code: string): Promise<ErrorFields> {
  expect(res.status).toBe(status);
  const { error } = (await res.json()) as { error: ErrorFields };
  expect(Object.keys(error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(error).toMatchObject({ code, message: expect.any(String), type: expect.any(String) });
  return error;
}

/** The status of a response whose body is not needed (the body is discarded). */
export async function statusOf(pending: Promise<Response>): Promise<number> {
  const res = await pending;
  await res.body?.cancel();
  return res.status;
}
