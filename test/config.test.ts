// config.json (docs/configuration.md#errors): one schema, ${ENV} anywhere, every problem listed by its path,
// cross-references checked, unknown keys refused with the nearest known name, hardening defaults
// filled; and the shipped config.json is valid.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../src/config/load.js";
import { problemsOf } from "./support/refusal.js";

const ENV = { CH_KEY: "ck", APP_KEY_ENV: "sk-app-key-0000" };

const minimal = () => ({
  channels: [{ name: "c1", key: "${CH_KEY}", models: ["m1"] }],
  llmModels: [{ model: "m1" }],
  apps: [{ id: "a1", model: "m1" }],
  apiKeys: [{ name: "k1", kind: "app", appId: "a1", key: "${APP_KEY_ENV}" }],
});

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
    // browsers: the gateway's own pages only, never every origin
    expect(c.server.cors.origins).toEqual(["http://127.0.0.1:3000", "http://localhost:3000"]);
  });
});

describe("config: unknown keys", () => {
  it("refuses a top-level typo at start-up, naming the intended key", () => {
    const raw = { ...minimal(), apikeys: [] };
    expect(() => parseConfig(raw, ENV)).toThrow(ConfigError);
    expect(problemsOf(raw, ENV)).toEqual(['apikeys: unknown key — did you mean "apiKeys"?']);
  });

  it("names the path and the suggestion for typos in nested objects", () => {
    const raw = {
      ...minimal(),
      server: { log: { levle: "debug" } },
      channels: [{ name: "c1", key: "k", models: ["m1"], conections: 8, healthCheck: { intervalMS: 0 } }],
      routing: { breaker: { cooldwnMs: 1000 } },
      store: { driver: "sqlite", pth: "./x.db" },
    };
    expect(problemsOf(raw, ENV)).toEqual(
      expect.arrayContaining([
        'server.log.levle: unknown key — did you mean "level"?',
        'channels[0].conections: unknown key — did you mean "connections"?',
        'channels[0].healthCheck.intervalMS: unknown key — did you mean "intervalMs"?',
        'routing.breaker.cooldwnMs: unknown key — did you mean "cooldownMs"?',
        'store.pth: unknown key — did you mean "path"?',
      ]),
    );
  });

  it("refuses unknown keys in apps, apiKeys, llmModels and shareLinks too", () => {
    const raw = {
      ...minimal(),
      llmModels: [{ model: "m1", maxContxt: 9000 }],
      apps: [{ id: "a1", model: "m1", qmp: 5 }],
      apiKeys: [{ name: "k1", kind: "app", appId: "a1", key: "${APP_KEY_ENV}", maxUsagePoint: 1 }],
      shareLinks: [{ shareId: "s1", appId: "a1", responseDetails: true }],
    };
    expect(problemsOf(raw, ENV)).toEqual([
      'llmModels[0].maxContxt: unknown key — did you mean "maxContext"?',
      'apps[0].qmp: unknown key — did you mean "qpm"?',
      'apiKeys[0].maxUsagePoint: unknown key — did you mean "maxUsagePoints"?',
      'shareLinks[0].responseDetails: unknown key — did you mean "responseDetail"?',
    ]);
  });

  it("says only `unknown key` when no known name is close", () => {
    const raw = { ...minimal(), server: { banana: true }, x: 1 };
    expect(problemsOf(raw, ENV)).toEqual(["server.banana: unknown key", "x: unknown key"]);
  });

  it("suggests among the chosen store driver's own keys", () => {
    const raw = { ...minimal(), store: { driver: "postgres", url: "postgres://db.internal/sluice", pth: "x" } };
    expect(problemsOf(raw, ENV)).toEqual(["store.pth: unknown key"]);
  });

  it("refuses a __proto__ key instead of treating it as a prototype", () => {
    const raw = JSON.parse(`{"__proto__": {"polluted": true}, ${JSON.stringify(minimal()).slice(1)}`);
    expect(problemsOf(raw, ENV)).toEqual(["__proto__: unknown key"]);
  });

  it("lists unknown keys beside every other problem in one pass", () => {
    const raw = { ...minimal(), apikeys: [], apps: [{ id: "a1", model: "ghost" }] };
    expect(problemsOf(raw, ENV)).toEqual(
      expect.arrayContaining(['apikeys: unknown key — did you mean "apiKeys"?', 'apps[0].model: unknown model "ghost"']),
    );
  });
});

describe("config: hardening fields", () => {
  it("fills every server, channel and routing default on a minimal config", () => {
    const c = parseConfig(minimal(), ENV);
    expect(c.server).toMatchObject({
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 30_000,
      shutdownTimeoutMs: 25_000,
      maxJsonDepth: 64,
      cors: { origins: ["*"] },
      workers: 1,
      log: { level: "info", destination: "stdout" },
    });
    expect(c.channels[0]).toMatchObject({
      totalTimeoutMs: 600_000,
      connections: 128,
      maxQueue: 1024,
      queueTimeoutMs: 10_000,
      maxAnswerBytes: 16 * 1024 * 1024,
      healthCheck: { intervalMs: 15_000, timeoutMs: 5_000 },
      concurrency: 0,
      forwardPriority: false,
      cacheTokens: 262_144,
      upstreamRouter: false,
    });
    expect(c.routing).toEqual({ maxAttempts: 3, breaker: { failures: 5, cooldownMs: 30_000, maxCooldownMs: 300_000 }, agingMs: 10_000, affinity: "prefix", spillLoad: 2, prefix: { match: 3, load: 2, kv: 1 }, imbalance: { ratio: 2, min: 4 } });
    expect(c.cluster).toBeUndefined();
  });

  it("fills the defaults beside a partly given nested object", () => {
    const raw = { ...minimal(), server: { cors: { origins: [] } }, routing: { breaker: { failures: 2 } } };
    raw.channels[0] = { ...raw.channels[0]!, healthCheck: { intervalMs: 0 } } as (typeof raw.channels)[0];
    const c = parseConfig(raw, ENV);
    expect(c.server.cors.origins).toEqual([]);
    expect(c.server.headersTimeoutMs).toBe(10_000);
    expect(c.channels[0]!.healthCheck).toEqual({ intervalMs: 0, timeoutMs: 5_000 });
    expect(c.routing).toEqual({ maxAttempts: 3, breaker: { failures: 2, cooldownMs: 30_000, maxCooldownMs: 300_000 }, agingMs: 10_000, affinity: "prefix", spillLoad: 2, prefix: { match: 3, load: 2, kv: 1 }, imbalance: { ratio: 2, min: 4 } });
  });

  it("accepts a postgres store and a cluster redisUrl", () => {
    const raw = { ...minimal(), store: { driver: "postgres", url: "postgres://u:p@db:5432/sluice" }, cluster: { redisUrl: "redis://cache:6379" } };
    const c = parseConfig(raw, ENV);
    expect(c.store).toEqual({ driver: "postgres", url: "postgres://u:p@db:5432/sluice" });
    expect(c.cluster).toEqual({ redisUrl: "redis://cache:6379", slotTtlMs: 30_000 });
  });

  it("refuses a breaker cooldown above its cap, routing.breaker.maxCooldownMs", () => {
    const raw = { ...minimal(), routing: { breaker: { cooldownMs: 600_000 } } };
    expect(problemsOf(raw, ENV)).toEqual(["routing.breaker.cooldownMs: cooldownMs must not exceed maxCooldownMs"]);
    const c = parseConfig({ ...minimal(), routing: { breaker: { cooldownMs: 600_000, maxCooldownMs: 900_000 } } }, ENV);
    expect(c.routing.breaker.maxCooldownMs).toBe(900_000);
  });

  it("reports invalid values of the new fields by their path", () => {
    const raw = {
      ...minimal(),
      server: { headersTimeoutMs: 0, bodyTimeoutMs: -1, maxJsonDepth: 1.5, workers: 0, cors: { origins: ["https://app.example.com/"] } },
      channels: [{ name: "c1", key: "k", models: ["m1"], totalTimeoutMs: 0, maxQueue: -1, maxAnswerBytes: "big", healthCheck: { intervalMs: -5 } }],
      routing: { maxAttempts: 0, breaker: { cooldownMs: 0 } },
      store: { driver: "redis", url: "redis://x" },
      cluster: { redisUrl: "http://not-redis" },
    };
    const paths = problemsOf(raw, ENV).map((p) => p.slice(0, p.indexOf(":")));
    expect(paths.sort()).toEqual(
      [
        "server.headersTimeoutMs",
        "server.bodyTimeoutMs",
        "server.maxJsonDepth",
        "server.workers",
        "server.cors.origins[0]",
        "channels[0].totalTimeoutMs",
        "channels[0].maxQueue",
        "channels[0].maxAnswerBytes",
        "channels[0].healthCheck.intervalMs",
        "routing.maxAttempts",
        "routing.breaker.cooldownMs",
        "store.driver",
        "cluster.redisUrl",
      ].sort(),
    );
  });
});
