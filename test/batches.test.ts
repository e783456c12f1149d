// OpenAI's Files and Batch API run by Sluice (docs/batches.md), driven by the openai SDK unmodified
// over real sockets: batches complete with the answers the same calls get synchronously, bad files
// fail validation whole (line numbers), files are the app's own, a cancel and the 24 h window stop
// what has not run, and a budget that runs out fails the rest without overspending.
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageRow } from "../src/store/types.js";
import { createStore } from "../src/store/index.js";
import { startEmbeddingsUpstream, type EmbeddingsUpstream } from "./support/embeddings-upstream.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-batches-app-a-0001";
const OTHER = "sk-batches-app-b-0002";
const POOR = "sk-batches-app-p-0003";
const GLOBAL = "sk-batches-global-0004";
const QPM = "sk-batches-qpm-one-0005";
let chat: Upstream;
let embed: EmbeddingsUpstream;
let gw: StartedGateway;
let offset = 0;
const rows: UsageRow[] = [];

beforeAll(async () => {
  [chat, embed] = await Promise.all([startUpstream(), startEmbeddingsUpstream()]);
  const store = createStore({ driver: "memory" });
  const record = store.recordUsage.bind(store);
  store.recordUsage = (row, scopes) => (rows.push(row), record(row, scopes));
  const channel = (name: string, baseUrl: string, models: string[]) => ({ name, baseUrl, models, healthCheck: { intervalMs: 0 } });
  gw = await startGateway(
    {
      channels: [channel("chat", chat.url, ["m"]), channel("embed", embed.url, ["e"])],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 }],
      vectorModels: [{ model: "e", charsPointsPrice: 1 }],
      routing: { maxAttempts: 1 },
      apps: [
        { id: "a", model: "m", models: ["m", "e"], maxUsagePoints: 100_000_000 },
        { id: "b", model: "m", models: ["m"], maxUsagePoints: -1 },
        { id: "p", model: "m", models: ["m"], maxUsagePoints: -1 },
      ],
      apiKeys: [
        { name: "ka", kind: "app", appId: "a", key: KEY },
        { name: "kb", kind: "app", appId: "b", key: OTHER },
        { name: "kp", kind: "app", appId: "p", key: POOR, maxUsagePoints: 0.6 },
        { name: "g", kind: "global", key: GLOBAL },
        { name: "kq", kind: "app", appId: "b", key: QPM, qpm: 1 },
      ],
      batches: { maxFileBytes: 200_000, cancelGraceMs: 0 },
    },
    { store, clock: () => Date.now() + offset },
  );
});
afterAll(async () => {
  await gw?.close();
  await gw?.store.close();
  await Promise.all([chat, embed].map((u) => u?.close()));
});

const client = (key = KEY) => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const jsonl = (lines: unknown[]) => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n";
const upload = async (text: string, key = KEY) => client(key).files.create({ file: await toFile(Buffer.from(text), "in.jsonl"), purpose: "batch" });
const chatLine = (i: number, extra: Record<string, unknown> = {}) => ({
  custom_id: `c-${i}`,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model: "m", messages: [{ role: "system", content: `prompt ${i % 3}` }, { role: "user", content: `question ${i}` }], ...extra },
});
const stable = (body: Record<string, unknown>) => ({ ...body, id: undefined, created: undefined });

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`timed out; last: ${JSON.stringify(v).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
const settled = (id: string, key = KEY) => until(() => client(key).batches.retrieve(id), (b) => ["completed", "failed", "cancelled", "expired"].includes(b.status));
const contentLines = async (id: string | null | undefined, key = KEY) => (id ? (await (await client(key).files.content(id)).text()).trim().split("\n").map((l) => JSON.parse(l)) : []);

describe("batches", () => {
  it("runs a 200-line chat batch to completed, each output the synchronous answer, one usage row per line", async () => {
    const lines = Array.from({ length: 200 }, (_, i) => chatLine(i));
    const file = await upload(jsonl(lines));
    expect(file).toMatchObject({ object: "file", purpose: "batch", filename: "in.jsonl" });
    const requests = async () => (await gw.store.summarizeUsage({})).totals.requests;
    const before = await requests();
    const batch = await client().batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { run: "1" } });
    expect(batch.status).toBe("in_progress");
    const done = await settled(batch.id);
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: 200, completed: 200, failed: 0 });
    expect(done.usage).toMatchObject({ input_tokens: 200 * 11, output_tokens: 200 * 13 });
    const out = await contentLines(done.output_file_id);
    expect(out).toHaveLength(200);
    expect(new Set(out.map((l) => l.custom_id)).size).toBe(200);
    expect(done.error_file_id).toBeNull();
    const sync = await client().chat.completions.create(lines[7]!.body as never);
    const line7 = out.find((l) => l.custom_id === "c-7");
    expect(line7).toMatchObject({ error: null, response: { status_code: 200 } });
    expect(line7.id).toMatch(/^batch_req_/);
    expect(stable(line7.response.body)).toEqual(stable(sync as unknown as Record<string, unknown>));
    // the lines' rows are written by the batch store with their outputs; the synchronous call's by the pipeline
    const stored = await gw.store.searchUsage({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 10_000, offset: 0, order: { by: "id", desc: false } });
    const ofBatch = stored.rows.filter((r) => r.batchId === batch.id);
    expect(ofBatch).toHaveLength(200);
    expect(new Set(ofBatch.map((r) => r.customId)).size).toBe(200);
    expect((await requests()) - before).toBe(201);
    expect((await client().batches.list({ limit: 5 })).data.map((b) => b.id)).toContain(batch.id);
    const outFile = await client().files.retrieve(done.output_file_id!);
    expect(outFile.purpose).toBe("batch_output");
  });

  it("runs an embeddings batch to completed with the synchronous answers", async () => {
    const lines = Array.from({ length: 20 }, (_, i) => ({ custom_id: `e-${i}`, method: "POST", url: "/v1/embeddings", body: { model: "e", input: `text ${i}` } }));
    const batch = await client().batches.create({ input_file_id: (await upload(jsonl(lines))).id, endpoint: "/v1/embeddings", completion_window: "24h" });
    const done = await settled(batch.id);
    expect(done.status).toBe("completed");
    const out = await contentLines(done.output_file_id);
    const sync = await client().embeddings.create({ model: "e", input: "text 3" });
    expect(stable(out.find((l) => l.custom_id === "e-3").response.body)).toEqual(stable(sync as unknown as Record<string, unknown>));
  });

  it("fails a file with any bad line as a whole, naming each line, running nothing", async () => {
    const before = chat.requests.length;
    const text = jsonl([
      chatLine(1),
      "{not json",
      { ...chatLine(2), method: "GET" },
      { ...chatLine(3), url: "/v1/embeddings" },
      chatLine(1),
      chatLine(5, { stream: true }),
      chatLine(6, { model: "nope" }),
      { method: "POST", url: "/v1/chat/completions", body: { model: "m" } },
    ]);
    const batch = await client().batches.create({ input_file_id: (await upload(text)).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    expect(batch.status).toBe("failed");
    expect(batch.errors?.data?.map((e) => [e.line, e.code])).toEqual([
      [2, "invalid_json_line"],
      [3, "invalid_method"],
      [4, "invalid_url"],
      [5, "duplicate_custom_id"],
      [6, "invalid_request"],
      [7, "model_not_found"],
      [8, "missing_required_parameter"],
    ]);
    expect(chat.requests.length).toBe(before);
  });

  it("refuses a file over batches.maxFileBytes with 413 file_too_large, keeping nothing", async () => {
    const count = (await client().files.list()).data.length;
    await expect(upload("x".repeat(300_000))).rejects.toMatchObject({ status: 413, code: "file_too_large" });
    expect((await client().files.list()).data.length).toBe(count);
  });

  it("keeps files and batches to their app: another app's are 404, a global key 403", async () => {
    const file = await upload(jsonl([chatLine(1)]));
    const batch = await client().batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await expect(client(OTHER).files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(client(OTHER).files.content(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(client(OTHER).files.delete(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(client(OTHER).batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
    await expect(client(OTHER).batches.cancel(batch.id)).rejects.toMatchObject({ status: 404 });
    await expect(client(OTHER).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).rejects.toMatchObject({ status: 404 });
    await expect(client(GLOBAL).files.list()).rejects.toMatchObject({ status: 403, code: "app_key_required" });
    expect((await client(OTHER).files.list()).data.map((f) => f.id)).not.toContain(file.id);
    await settled(batch.id);
    expect((await client().files.delete(file.id)).deleted).toBe(true);
    await expect(client().files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
  });

  it("counts POST /v1/batches against the key's QPM", async () => {
    const file = await upload(jsonl([chatLine(1)]), QPM);
    const first = await client(QPM).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    expect(first.status).toBe("in_progress");
    await expect(client(QPM).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).rejects.toMatchObject({ status: 429 });
  });

  it("cancels mid-run: no new line, the batch cancelled with the files of what ran", async () => {
    chat.behave({ firstByteDelayMs: 150 });
    try {
      const batch = await client().batches.create({ input_file_id: (await upload(jsonl(Array.from({ length: 40 }, (_, i) => chatLine(i))))).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      await until(() => client().batches.retrieve(batch.id), () => chat.requests.length > 0);
      const cancelling = await client().batches.cancel(batch.id);
      expect(["cancelling", "cancelled"]).toContain(cancelling.status);
      const done = await settled(batch.id);
      expect(done.status).toBe("cancelled");
      const errors = await contentLines(done.error_file_id);
      const out = await contentLines(done.output_file_id);
      expect(out.length + errors.length).toBe(40);
      expect(errors.filter((l) => l.error?.code === "batch_cancelled").length).toBeGreaterThan(30);
      expect(errors.find((l) => l.error)).toMatchObject({ response: null, error: { code: "batch_cancelled" } });
    } finally {
      chat.behave({ firstByteDelayMs: 0 });
    }
  });

  it("expires a batch not finished 24 h after creation, with the files of what ran", async () => {
    chat.behave({ firstByteDelayMs: 200 });
    try {
      const batch = await client().batches.create({ input_file_id: (await upload(jsonl(Array.from({ length: 30 }, (_, i) => chatLine(i))))).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      await until(() => client().batches.retrieve(batch.id), () => chat.requests.length > 0);
      offset += 25 * 3_600_000;
      const done = await settled(batch.id);
      expect(done.status).toBe("expired");
      const errors = await contentLines(done.error_file_id);
      expect(errors.filter((l) => l.error?.code === "batch_expired").length).toBeGreaterThan(20);
    } finally {
      chat.behave({ firstByteDelayMs: 0 });
    }
  });

  it("fails the remaining lines with 429 insufficient_quota once the key's budget runs out, never spending past it", async () => {
    const batch = await client(POOR).batches.create({ input_file_id: (await upload(jsonl(Array.from({ length: 60 }, (_, i) => chatLine(i))), POOR)).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    const done = await settled(batch.id, POOR);
    expect(done.status).toBe("completed");
    expect(done.request_counts!.failed).toBeGreaterThan(0);
    expect(done.request_counts!.completed).toBeGreaterThan(0);
    const errors = await contentLines(done.error_file_id, POOR);
    expect(errors[0]).toMatchObject({ error: null, response: { status_code: 429, body: { error: { code: "insufficient_quota" } } } });
    expect(await gw.store.getSpent("key:kp")).toBeLessThanOrEqual(0.6);
  });
});
