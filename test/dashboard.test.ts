// The Grafana dashboard and the alert rules against reality: a real Prometheus scrapes a real Sluice
// that served every kind of traffic and evaluates grafana/alerts.yml. Every panel query must return
// data with the dashboard's variables filled in as Grafana fills them, every variable must list
// values, and every rule must evaluate without error. A metric or label renamed in code but not in
// grafana/ fails here.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dataSourceRefs,
  interpolate,
  labelValuesQuery,
  metricNamesIn,
  panelQueries,
  pickedValues,
  readDashboard,
  selectors,
  variables,
  type Dashboard,
  type Variable,
} from "./support/grafana-dashboard.js";
import { startGateway } from "./support/gateway.js";
import { pollUntil, startPrometheus, type Prometheus, type PromResponse } from "./support/prometheus.js";
import { startAudioUpstream, type AudioUpstream } from "./support/audio-upstream.js";
import { startCompletionsUpstream, type CompletionsUpstream } from "./support/completions-upstream.js";
import { startRerankUpstream, type RerankUpstream } from "./support/rerank-upstream.js";
import { makeWav } from "./support/tone.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ALERTS_FILE = fileURLToPath(new URL("../grafana/alerts.yml", import.meta.url));
const APP_KEY = "sk-dashboard-test-app-key";
const JOB = "sluice";
const VARIABLES = ["datasource", "job", "instance", "model", "app"];
/** Label filters a selector must carry when its metric has the label. */
const FILTERS: Record<string, string> = {
  job: 'job=~"$job"',
  instance: 'instance=~"$instance"',
  model: 'model=~"$model"',
  gen_ai_request_model: 'gen_ai_request_model=~"$model"',
  app: 'app=~"$app"',
};

let dashboard: Dashboard;

beforeAll(async () => {
  dashboard = await readDashboard();
});

describe("grafana dashboard file", () => {
  it("offers datasource, job, instance, model and app variables, each listing values of the chosen job and instances", () => {
    const list = variables(dashboard);
    expect(list.map((v) => v.name)).toEqual(VARIABLES);
    expect(list[0]).toMatchObject({ type: "datasource", query: "prometheus" });
    for (const v of list.slice(1)) {
      expect(v, v.name).toMatchObject({ type: "query", multi: true, includeAll: true, datasource: { uid: "${datasource}" } });
      const match = labelValuesQuery(v).match;
      if (v.name !== "job") expect(match, v.name).toContain(FILTERS.job);
      if (v.name !== "job" && v.name !== "instance") expect(match, v.name).toContain(FILTERS.instance);
    }
    // All of job and instance lists Sluice's own values, so `up` and process metrics of other jobs
    // stay out; All of model and app also matches series without one (a 401 has no model or app)
    expect(list.filter((v) => v.allValue !== undefined).map((v) => [v.name, v.allValue])).toEqual([["model", ".*"], ["app", ".*"]]);
  });

  it("asks for its Prometheus on import and refers to it only through $datasource", () => {
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: "DS_PROMETHEUS", type: "datasource", pluginId: "prometheus" })]);
    expect(variables(dashboard)[0]!.current?.value).toBe("${DS_PROMETHEUS}");
    const refs = dataSourceRefs(dashboard).filter((ref) => ref.type !== "grafana"); // the built-in annotations
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) expect(ref).toEqual({ type: "prometheus", uid: "${datasource}" });
  });

  it("filters every metric of every panel query by $job and $instance", () => {
    const queries = panelQueries(dashboard);
    expect(queries.length).toBeGreaterThan(20);
    for (const { title, expr } of queries) {
      const found = selectors(expr);
      expect(found.length, `${title}: ${expr}`).toBeGreaterThan(0);
      for (const s of found) {
        expect(s.matchers, `${title}: ${s.metric}`).toContain(FILTERS.job);
        expect(s.matchers, `${title}: ${s.metric}`).toContain(FILTERS.instance);
      }
    }
  });

  it("has panels for failover attempts, channel state, queue depth, budget refusals, process errors, reloads, embeddings, the other kinds routing and quotas by time", () => {
    const exprs = panelQueries(dashboard).map((q) => q.expr);
    const wanted = [
      /sluice_upstream_attempts_total\{[^}]*outcome=~"retried\|circuit_open"/,
      /sluice_channel_up\{/,
      /sluice_channel_queue_depth\{/,
      /sluice_upstream_attempts_total\{[^}]*outcome="queue_full"/,
      /sluice_budget_refusals_total\{/,
      /sluice_process_errors_total\{/,
      /sluice_config_reloads_total\{/,
      /sluice_requests_total\{[^}]*route="embeddings"/,
      /sluice_tokens_total\{[^}]*type="input"[^}]*\}.* and on \(job, instance, model, app\) .*route="embeddings"/,
      // rerank, speech, transcription and completions: requests, latency and points by kind
      /sum by \(route, status\) \(rate\(sluice_requests_total\{[^}]*route=~"rerank\|speech\|transcription\|completions"/,
      /sum by \(le, route\) \(rate\(sluice_request_duration_seconds_bucket\{[^}]*route=~"rerank\|speech\|transcription\|completions"/,
      /sum by \(route\) \(rate\(sluice_route_points_total\{/,
      // routing across replicas: the prefix cache's hit ratio, route decisions, load per channel
      /sluice_upstream_cached_tokens_total\{[^}]*\}.*\/ sum by \(model\) \(rate\(sluice_tokens_total\{[^}]*type="input"/,
      /sum by \(model, decision\) \(rate\(sluice_route_decisions_total\{/,
      /sluice_channel_load\{/,
      // routing by prefix: the share of the prefix the chosen channel held, each channel's index
      /sluice_route_prefix_match_ratio_sum\{[^}]*\}.*\/ clamp_min\(sum by \(model\) \(rate\(sluice_route_prefix_match_ratio_count\{/,
      /sluice_prefix_index_entries\{/,
      // quotas by time: tokens a minute against tpm, a period's spend against periodPoints
      /rate\(sluice_quota_tokens_total\{[^}]*\}\[\$__rate_interval\]\)\) \* 60/,
      /sluice_quota_tpm\{/,
      /sluice_quota_period_spent_points\{/,
      /sluice_quota_period_points\{/,
      /up\{/,
    ];
    for (const pattern of wanted) expect(exprs.some((e) => pattern.test(e)), String(pattern)).toBe(true);
  });
});

describe("grafana dashboard and alert rules on a real Prometheus", () => {
  let upstream: Upstream;
  let fleet: FleetUpstreams;
  let gateway: { url: string; close(): Promise<void> };
  let prometheus: Prometheus;
  let workDir: string;
  const poll = (what: string, check: () => Promise<boolean>, mustPass = true) =>
    pollUntil(what, 30_000, check, { mustPass, log: () => prometheus.log() });
  const hasData = async (expr: string) => ((await prometheus.query(expr)).data?.result.length ?? 0) > 0;

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), "sluice-dashboard-"));
    upstream = await startUpstream();
    fleet = { rerank: await startRerankUpstream(), audio: await startAudioUpstream(), code: await startCompletionsUpstream() };
    gateway = await startGateway(gatewayConfig(upstream.url, fleet));
    prometheus = await startPrometheus({ target: new URL(gateway.url).host, job: JOB, dir: workDir, ruleFiles: [ALERTS_FILE] });

    await poll("Prometheus to scrape Sluice", () => hasData(`up{job="${JOB}"} == 1`));
    // rate() cannot see a series' first value, so send a second round once the first was scraped:
    // then every series the traffic creates also moves within the rate window
    await sendEveryKindOfTraffic(gateway.url, upstream);
    await poll("the first round of traffic to be scraped", () => hasData('sluice_requests_total{route="transcription"}'));
    await sendEveryKindOfTraffic(gateway.url, upstream);
  }, 60_000);

  afterAll(async () => {
    await prometheus?.stop();
    await gateway?.close();
    await upstream?.close();
    await Promise.all([fleet?.rerank.close(), fleet?.audio.close(), fleet?.code.close()]);
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  /** What each variable lists, each query filled in with the variables before it at All. */
  async function listedValues(): Promise<Record<string, string[]>> {
    const listed: Record<string, string[]> = {};
    for (const v of variables(dashboard).filter((v) => v.type === "query")) {
      const { match, label } = labelValuesQuery(v);
      listed[v.name] = await prometheus.labelValues(label, interpolate(match, allSelected(listed)));
    }
    return listed;
  }

  /** Grafana's All: the allValue when there is one, else every listed value. */
  function allSelected(listed: Record<string, string[]>): Record<string, string> {
    const byName = new Map(variables(dashboard).map((v): [string, Variable] => [v.name, v]));
    return Object.fromEntries(Object.entries(listed).map(([name, values]) => [name, byName.get(name)!.allValue ?? pickedValues(values)]));
  }

  /** Polls until every panel query answers a finite number; returns the ones that did not. */
  async function queriesWithoutData(values: Record<string, string>): Promise<string[]> {
    const queries = panelQueries(dashboard).map(({ title, expr }) => ({ title, expr: interpolate(expr, values) }));
    let failing: string[] = [];
    await poll("every dashboard query to return data", async () => {
      failing = [];
      for (const { title, expr } of queries) {
        const res = await prometheus.query(expr);
        if (res.status !== "success") failing.push(`${title}: ${expr} → ${res.error ?? res.status}`);
        else if (!hasFiniteValue(res)) failing.push(`${title}: ${expr} → no data`);
      }
      return failing.length === 0;
    }, false);
    return failing;
  }

  it("every variable lists the values the gateway reported", async () => {
    const listed = await listedValues();
    expect(listed.job).toEqual([JOB]);
    expect(listed.instance).toEqual([new URL(gateway.url).host]);
    expect(listed.model).toEqual(expect.arrayContaining(["glm", "text-embed", "bge-reranker", "cosyvoice", "whisper-1", "glm-coder"]));
    expect(listed.app).toEqual(["support"]);
  });

  it("every panel query returns data with every variable at All", async () => {
    const values = allSelected(await listedValues());
    expect(values).toMatchObject({ model: ".*", app: ".*" });
    const failing = await queriesWithoutData(values);
    expect(failing, `queries without data:\n${failing.join("\n")}`).toEqual([]);
  }, 60_000);

  it("every panel query returns data with every listed value picked (the filters name real labels)", async () => {
    const listed = await listedValues();
    const values = Object.fromEntries(Object.entries(listed).map(([name, v]) => [name, pickedValues(v)]));
    expect(values.instance).toMatch(/^127\\\\\.0\\\\\.0\\\\\.1:\d+$/); // escaped as Grafana escapes it
    const failing = await queriesWithoutData(values);
    expect(failing, `queries without data:\n${failing.join("\n")}`).toEqual([]);
  }, 60_000);

  it("filters by $model and $app wherever the metric has those labels, and names no metric bare", async () => {
    const metricNames = new Set(await prometheus.labelValues("__name__", '{job=~".+"}'));
    const problems: string[] = [];
    for (const { title, expr } of panelQueries(dashboard)) {
      for (const { metric, matchers } of selectors(expr)) {
        for (const label of await prometheus.labelNames(metric)) {
          const filter = FILTERS[label];
          if (filter && !matchers.includes(filter)) problems.push(`${title}: ${metric} lacks ${filter}`);
        }
      }
      const filtered = new Set(selectors(expr).map((s) => s.metric));
      for (const metric of metricNamesIn(expr)) {
        if (!metricNames.has(metric)) problems.push(`${title}: ${metric} is not a metric Sluice reports`);
        else if (!filtered.has(metric)) problems.push(`${title}: ${metric} without label filters`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every alert rule is loaded, labelled and annotated, and evaluates without error", async () => {
    type Rule = { name: string; query: string; health: string; lastError?: string; labels: Record<string, string>; annotations: Record<string, string> };
    let rules: Rule[] = [];
    const healthy = await poll("every alert rule to be evaluated", async () => {
      const res = await fetch(`${prometheus.url}/api/v1/rules?type=alert`);
      rules = ((await res.json()) as { data: { groups: { rules: Rule[] }[] } }).data.groups.flatMap((g) => g.rules);
      return rules.length > 0 && rules.every((r) => r.health === "ok");
    }, false);
    expect(rules.filter((r) => r.health !== "ok").map((r) => `${r.name}: ${r.health} ${r.lastError ?? ""}`)).toEqual([]);
    expect(healthy).toBe(true);

    expect(rules.map((r) => r.name)).toEqual(expect.arrayContaining([
      "SluiceDown", "SluiceHigh5xxRatio", "SluiceChannelDown", "SluiceSlowTimeToFirstToken",
      "SluiceChannelQueueFull", "SluiceChannelSaturated", "SluiceBudgetRefusalSpike",
    ]));
    const metricNames = new Set(await prometheus.labelValues("__name__", '{job=~".+"}'));
    for (const rule of rules) {
      expect(["critical", "warning"], rule.name).toContain(rule.labels.severity);
      expect(Object.keys(rule.annotations).sort(), rule.name).toEqual(["description", "summary"]);
      const res: PromResponse = await prometheus.query(rule.query);
      expect(res.status, `${rule.name}: ${res.error ?? ""}`).toBe("success");
      // a misspelt metric evaluates fine and never fires: every one must exist
      const read = metricNamesIn(rule.query);
      expect(read.length, rule.name).toBeGreaterThan(0);
      for (const metric of read) expect(metricNames.has(metric), `${rule.name}: ${metric}`).toBe(true);
    }
  }, 60_000);
});

interface FleetUpstreams {
  rerank: RerankUpstream;
  audio: AudioUpstream;
  code: CompletionsUpstream;
}

function gatewayConfig(upstreamUrl: string, fleet: FleetUpstreams) {
  const quiet = { healthCheck: { intervalMs: 0 } };
  return {
    server: { log: { level: "silent", destination: "stdout" } },
    store: { driver: "memory" },
    channels: [
      { name: "local", baseUrl: upstreamUrl, key: "channel-key-dashboard", models: ["glm"] },
      { name: "embed", type: "echo", models: ["text-embed"] },
      { name: "rerank", baseUrl: fleet.rerank.url, models: ["bge-reranker"], ...quiet },
      { name: "audio", baseUrl: fleet.audio.url, models: ["cosyvoice", "whisper-1"], ...quiet },
      { name: "code", baseUrl: fleet.code.url, models: ["glm-coder"], ...quiet },
    ],
    llmModels: [
      { model: "glm", name: "GLM", maxContext: 8000, maxResponse: 1000, inputPrice: 1, outputPrice: 2 },
      { model: "glm-coder", maxContext: 8000, maxResponse: 100, inputPrice: 1, outputPrice: 2, completions: true },
    ],
    vectorModels: [{ model: "text-embed", inputPrice: 1 }],
    reRankModels: [{ model: "bge-reranker", charsPointsPrice: 1 }],
    audioSpeechModels: [{ model: "cosyvoice", charsPointsPrice: 1 }],
    whisperModel: { model: "whisper-1", charsPointsPrice: 1 },
    apps: [
      // quotas by time (tokens per minute, a day's points) large enough never to refuse the traffic
      { id: "support", name: "Support bot", model: "glm", models: ["glm", "text-embed", "glm-coder", "bge-reranker", "cosyvoice", "whisper-1"], tpm: 10_000_000, periodPoints: 1_000_000 },
    ],
    apiKeys: [{ name: "support-web", kind: "app", appId: "support", key: APP_KEY }],
  };
}

/** ok non-stream, ok stream, an embedding, a rerank, speech, a transcription, a legacy completion,
 *  a rejected key (401) and an upstream error (5xx). */
async function sendEveryKindOfTraffic(base: string, upstream: Upstream): Promise<void> {
  const post = (path: string, body: Record<string, unknown>, key = APP_KEY) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const chat = (body: Record<string, unknown>, key?: string) =>
    post("/v1/chat/completions", { model: "glm", messages: [{ role: "user", content: "Hello" }], ...body }, key);

  const plain = await chat({ stream: false });
  expect(plain.status).toBe(200);
  await plain.text();

  const streamed = await chat({ stream: true });
  expect(streamed.status).toBe(200);
  expect(await streamed.text()).toContain("[DONE]");

  const embedded = await post("/v1/embeddings", { model: "text-embed", input: ["Hello", "world"] });
  expect(embedded.status).toBe(200);
  await embedded.text();

  for (const [path, body] of [
    ["/v1/rerank", { model: "bge-reranker", query: "capital", documents: ["Paris is the capital", "cats"] }],
    ["/v1/audio/speech", { model: "cosyvoice", input: "Hello there", voice: "alloy" }],
    ["/v1/completions", { model: "glm-coder", prompt: "def add(a, b):" }],
  ] as const) {
    const res = await post(path, body);
    expect(res.status, path).toBe(200);
    await res.arrayBuffer();
  }
  const form = new FormData();
  form.set("model", "whisper-1");
  form.set("file", new Blob([new Uint8Array(makeWav({ seconds: 1 }))]), "tone.wav");
  const transcribed = await fetch(`${base}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${APP_KEY}` }, body: form });
  expect(transcribed.status).toBe(200);
  await transcribed.text();

  const rejected = await chat({ stream: false }, "sk-not-a-configured-key");
  expect(rejected.status).toBe(401);
  await rejected.text();

  upstream.behave({ status: 500 });
  const failed = await chat({ stream: false });
  expect(failed.status).toBeGreaterThanOrEqual(500);
  await failed.text();
  upstream.behave({ status: 200 });
}

/** A panel has something to draw: at least one sample that is a number (histogram_quantile of nothing is NaN). */
function hasFiniteValue(res: PromResponse): boolean {
  const result = res.data?.result ?? [];
  if (res.data?.resultType === "scalar") return Number.isFinite(Number((result as [number, string])[1]));
  return (result as { value: [number, string] }[]).some((s) => Number.isFinite(Number(s.value[1])));
}
