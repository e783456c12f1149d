// The checks across a config's sections (docs/configuration.md#errors): every name used
// is defined, every name defined once across every kind of model, aliases name real models and hide
// none, no length field passes through to a model, several workers have shared state.
import type { z } from "zod";

/** Cross-references between sections: every name used must be defined, every name defined once. */
export function checkReferences(c: ReferencedConfig, ctx: z.RefinementCtx): void {
  checkNames(c, ctx);
  checkFleetReferences(c, ctx);
  checkWorkers(c, ctx);
}

function checkNames(c: ReferencedConfig, ctx: z.RefinementCtx): void {
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: "custom", path, message });
  const models = new Set(c.llmModels.map((m) => m.model));
  const vectors = new Set(c.vectorModels.map((m) => m.model));
  const fleet = new Set(fleetModels(c).map((f) => f.model));
  const known = (m: string) => models.has(m) || vectors.has(m) || fleet.has(m);
  const apps = new Set(c.apps.map((a) => a.id));
  const served = new Set(c.channels.flatMap((ch) => ch.models));

  duplicates(c.llmModels.map((m) => m.model)).forEach((i) => issue(["llmModels", i, "model"], "duplicate model"));
  // one name, one model: channels and requests name chat and embedding models alike
  duplicates([...c.llmModels, ...c.vectorModels].map((m) => m.model)).forEach((i) => {
    if (i >= c.llmModels.length) issue(["vectorModels", i - c.llmModels.length, "model"], "duplicate model (also in llmModels or vectorModels)");
  });
  duplicates(c.channels.map((ch) => ch.name)).forEach((i) => issue(["channels", i, "name"], "duplicate channel name"));
  const ids = c.channels.map((ch, i) => [ch.id, i] as const).filter(([id]) => id !== undefined);
  duplicates(ids.map(([id]) => String(id))).forEach((j) => issue(["channels", ids[j]![1], "id"], "duplicate channel id"));
  c.channels.forEach((ch, i) =>
    Object.keys(ch.modelMapping).forEach((m) => {
      if (!ch.models.includes(m)) issue(["channels", i, "modelMapping", m], `"${m}" is not one of the channel's models`);
    }),
  );
  duplicates(c.apps.map((a) => a.id)).forEach((i) => issue(["apps", i, "id"], "duplicate app id"));
  duplicates(c.apiKeys.map((k) => k.name)).forEach((i) => issue(["apiKeys", i, "name"], "duplicate key name"));
  duplicates(c.shareLinks.map((s) => s.shareId)).forEach((i) => issue(["shareLinks", i, "shareId"], "duplicate shareId"));

  c.channels.forEach((ch, i) =>
    ch.models.forEach((m, j) => {
      if (!known(m)) issue(["channels", i, "models", j], `unknown model "${m}" (not in llmModels, vectorModels, reRankModels, audioSpeechModels, whisperModel or sttModels)`);
    }),
  );
  c.llmModels.forEach((m, i) => {
    if (!served.has(m.model)) issue(["llmModels", i, "model"], `no channel serves model "${m.model}"`);
    m.passThrough.forEach((field, j) => {
      const why = passThroughRefusal(field);
      if (why) issue(["llmModels", i, "passThrough", j], why);
    });
    if (m.maxResponse >= m.maxContext) issue(["llmModels", i, "maxResponse"], "must be below maxContext");
  });
  c.vectorModels.forEach((m, i) => {
    if (!served.has(m.model)) issue(["vectorModels", i, "model"], `no channel serves model "${m.model}"`);
  });
  c.apps.forEach((a, i) => {
    if (!models.has(a.model)) issue(["apps", i, "model"], vectors.has(a.model) ? `"${a.model}" is an embedding model: the default model must be in llmModels` : fleet.has(a.model) ? `"${a.model}" is not a chat model: the default model must be in llmModels` : `unknown model "${a.model}"`);
    a.models?.forEach((m, j) => {
      if (!known(m)) issue(["apps", i, "models", j], `unknown model "${m}"`);
    });
    if (a.models && !a.models.includes(a.model)) issue(["apps", i, "models"], `must include the default model "${a.model}"`);
  });
  c.apiKeys.forEach((k, i) => {
    if (k.appId && !apps.has(k.appId)) issue(["apiKeys", i, "appId"], `unknown app "${k.appId}"`);
  });
  c.shareLinks.forEach((s, i) => {
    if (!apps.has(s.appId)) issue(["shareLinks", i, "appId"], `unknown app "${s.appId}"`);
  });
  for (const [alias, target] of Object.entries(c.aliases)) {
    if (!known(target)) issue(["aliases", alias], `unknown model "${target}"`);
    else if (known(alias)) issue(["aliases", alias], `"${alias}" is a configured model already: an alias cannot replace it`);
  }
}

/** Fields a model may never be sent: each sets the output's length (or multiplies it) under a name
 *  the budget does not see (docs/configuration.md#models). */
export const LENGTH_FIELDS = new Set(["best_of", "max_length", "max_new_tokens", "min_tokens", "min_length", "max_output_tokens", "max_gen_len", "num_predict", "num_return_sequences", "num_beams", "use_beam_search", "beam_width", "length_penalty", "ignore_eos"]);

function passThroughRefusal(field: string): string | undefined {
  if (LENGTH_FIELDS.has(field)) return `"${field}" sets the answer's length under another name than max_tokens: it never reaches a model`;
  return undefined;
}

/** The models of the other kinds (docs/fleet.md), each with its config path. */
function fleetModels(c: ReferencedConfig): Array<{ model: string; path: (string | number)[]; requestUrl?: string }> {
  return [
    ...c.reRankModels.map((m, i) => ({ model: m.model, path: ["reRankModels", i, "model"], requestUrl: m.requestUrl })),
    ...c.audioSpeechModels.map((m, i) => ({ model: m.model, path: ["audioSpeechModels", i, "model"] })),
    ...(c.whisperModel ? [{ model: c.whisperModel.model, path: ["whisperModel", "model"] }] : []),
    ...c.sttModels.map((m, i) => ({ model: m.model, path: ["sttModels", i, "model"] })),
  ];
}

/** Rerank, speech and transcription models: one name, one model across every kind (channels and
 *  requests name them alike), and each served by a channel, or by its own `requestUrl`. */
function checkFleetReferences(c: ReferencedConfig, ctx: z.RefinementCtx): void {
  const kinds = new Map<string, string>();
  for (const m of c.llmModels) kinds.set(m.model, "llmModels");
  for (const m of c.vectorModels) if (!kinds.has(m.model)) kinds.set(m.model, "vectorModels");
  const served = new Set(c.channels.flatMap((ch) => ch.models));
  for (const f of fleetModels(c)) {
    const first = kinds.get(f.model);
    if (first) ctx.addIssue({ code: "custom", path: f.path, message: `duplicate model: "${f.model}" is also in ${first}` });
    else kinds.set(f.model, String(f.path[0]));
    if (!f.requestUrl && !served.has(f.model)) ctx.addIssue({ code: "custom", path: f.path, message: `no channel serves model "${f.model}"` });
  }
  // a model with its own requestUrl is served there alone: a channel listing it would never be called
  const ownUrl = new Set(c.reRankModels.filter((m) => m.requestUrl).map((m) => m.model));
  c.channels.forEach((ch, i) => {
    ch.models.forEach((m, j) => {
      if (ownUrl.has(m)) ctx.addIssue({ code: "custom", path: ["channels", i, "models", j], message: `"${m}" has its own requestUrl in reRankModels: list it in no channel, or drop its requestUrl` });
    });
    // the gateway names the channel it makes for a requestUrl so (src/config/fleet.ts)
    const made = /^rerank:(.+)$/.exec(ch.name)?.[1];
    if (made !== undefined && ownUrl.has(made)) ctx.addIssue({ code: "custom", path: ["channels", i, "name"], message: `"${ch.name}" names the channel made for the requestUrl of rerank model "${made}": choose another name` });
  });
}

/** Several workers share one port, so their records and counters must live outside any one of them:
 *  a SQLite file is locked by one process, and in-process counters would each allow the whole budget. */
function checkWorkers(c: { server: { workers: number }; store: { driver: string }; cluster?: unknown }, ctx: z.RefinementCtx): void {
  if (c.server.workers === 1 || (c.store.driver === "postgres" && c.cluster)) return;
  const has = [c.store.driver === "postgres" ? "" : `the ${c.store.driver} store`, c.cluster ? "" : "no cluster.redisUrl"];
  ctx.addIssue({
    code: "custom",
    path: ["server", "workers"],
    message: `${c.server.workers} workers need the postgres store ("store": {"driver": "postgres", "url": "postgres://…"}) and cluster.redisUrl, since a SQLite file and in-process counters serve one process; this config has ${has.filter(Boolean).join(" and ")}`,
  });
}

interface Named {
  model: string;
}

/** What the checks read of a config (the schema's output has all of it). */
interface ReferencedConfig {
  aliases: Record<string, string>;
  channels: Array<{ name: string; id?: number; models: string[]; modelMapping: Record<string, string> }>;
  llmModels: Array<Named & { passThrough: string[]; maxResponse: number; maxContext: number }>;
  vectorModels: Named[];
  reRankModels: Array<Named & { requestUrl?: string }>;
  audioSpeechModels: Named[];
  whisperModel?: Named;
  sttModels: Named[];
  apps: Array<{ id: string; model: string; models?: string[] }>;
  apiKeys: Array<{ name: string; appId?: string }>;
  shareLinks: Array<{ shareId: string; appId: string }>;
  server: { workers: number };
  store: { driver: string };
  cluster?: unknown;
}

function duplicates(values: string[]): number[] {
  const seen = new Set<string>();
  const out: number[] = [];
  values.forEach((v, i) => (seen.has(v) ? out.push(i) : seen.add(v)));
  return out;
}
