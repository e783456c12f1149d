// config.json (CONTRACTS §7): one schema, ${ENV} anywhere, every problem listed by its path,
// cross-references checked; and the shipped config.json is valid.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../src/config/load.js";

const minimal = () => ({
  channels: [{ name: "c1", key: "${CH_KEY}", models: ["m1"] }],
  llmModels: [{ model: "m1" }],
  apps: [{ id: "a1", model: "m1" }],
  apiKeys: [{ name: "k1", kind: "app", appId: "a1", key: "${APP_KEY_ENV}" }],
});

function problemsOf(raw: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected the config to be refused");
}

describe("config", () => {
  it("fills defaults: private-model base URL, limits, store and server", () => {
    const c = parseConfig(minimal(), { CH_KEY: "ck", APP_KEY_ENV: "sk-app-key-0000" });
    expect(c.channels[0]).toMatchObject({ baseUrl: "http://127.0.0.1:6006", key: "ck", type: "openai", weight: 1, priority: 0 });
    expect(c.server).toMatchObject({ port: 3000, host: "127.0.0.1", bodyLimitBytes: 2 * 1024 * 1024 });
    expect(c.store).toEqual({ driver: "sqlite", path: "./data/sluice.db" });
    expect(c.apps[0]).toMatchObject({ history: 6, maxUsagePoints: -1, qpm: 0 });
    expect(c.apiKeys[0]!.key).toBe("sk-app-key-0000");
  });

  it("substitutes ${ENV} inside longer strings", () => {
    const raw = minimal();
    raw.channels[0]!.key = "Bearer-${CH_KEY}-x";
    expect(parseConfig(raw, { CH_KEY: "abc", APP_KEY_ENV: "sk-app-key-0000" }).channels[0]!.key).toBe("Bearer-abc-x");
  });

  it("lists every problem by its path", () => {
    const raw = {
      ...minimal(),
      llmModels: [{ model: "m1" }, { model: "m2", maxContext: "big" }],
      apps: [{ id: "a1", model: "ghost" }],
    };
    const problems = problemsOf(raw, {});
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^channels\[0\]\.key: environment variable CH_KEY is not set/),
        expect.stringMatching(/^apiKeys\[0\]\.key: environment variable APP_KEY_ENV is not set/),
        expect.stringMatching(/^llmModels\[1\]\.maxContext: .*number/),
      ]),
    );
  });

  it("checks cross-references: app model, key app, served models, share link app", () => {
    const raw = {
      channels: [{ name: "c1", models: ["m1"] }],
      llmModels: [{ model: "m1" }, { model: "lonely" }],
      apps: [{ id: "a1", model: "nope" }],
      apiKeys: [{ name: "k1", kind: "app", appId: "zz", key: "sk-app-key-0000" }],
      shareLinks: [{ shareId: "s1", appId: "missing" }],
    };
    const problems = problemsOf(raw);
    expect(problems).toEqual(
      expect.arrayContaining([
        'llmModels[1].model: no channel serves model "lonely"',
        'apps[0].model: unknown model "nope"',
        'apiKeys[0].appId: unknown app "zz"',
        'shareLinks[0].appId: unknown app "missing"',
      ]),
    );
  });

  it("refuses a key with both or neither of key and sha256, and a global key with an app", () => {
    const raw = {
      ...minimal(),
      apiKeys: [
        { name: "a", kind: "app", appId: "a1" },
        { name: "b", kind: "global", appId: "a1", key: "sk-global-key-000" },
        { name: "c", kind: "app", appId: "a1", sha256: "xyz" },
      ],
    };
    const problems = problemsOf(raw, { CH_KEY: "x" });
    expect(problems).toEqual(
      expect.arrayContaining([
        "apiKeys[0].key: give exactly one of key or sha256",
        "apiKeys[1].appId: a global key carries no appId",
        "apiKeys[2].sha256: expected 64 hex digits",
      ]),
    );
  });

  it("accepts the shipped config.json", () => {
    const raw = JSON.parse(readFileSync(new URL("../config.json", import.meta.url), "utf8"));
    const c = parseConfig(raw, {});
    expect(c.channels.map((ch) => ch.baseUrl)).toContain("http://127.0.0.1:6006");
    expect(c.channels.some((ch) => ch.type === "echo")).toBe(true);
  });
});
