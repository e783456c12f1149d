// Preemption (docs/batches.md#preemption): an interactive call that would wait for a channel's slot
// stops the batch line holding it; the call is answered while the line's upstream answer is still
// held, the line runs again later, and the batch completes with one usage row per line.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageRow } from "../src/store/types.js";
import { createStore } from "../src/store/index.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";

const KEY = "sk-batches-preempt-0001";
let gw: StartedGateway;
const rows: UsageRow[] = [];

/** A model server that holds batch lines (prompts starting "line") until told, and answers anything else at once. */
const upstream = (() => {
  const held: Array<() => void> = [];
  const calls = new Map<string, number>();
  let hold = true;
  let closedEarly = 0;
  const onHeld = new Set<() => void>();
  const answer = (res: ServerResponse, text: string) => {
    const body = JSON.stringify({ id: "cmpl-1", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: `re: ${text}` }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } });
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString() || "{}") as { messages?: Array<{ content: string }> };
      const text = body.messages?.at(-1)?.content ?? "";
      calls.set(text, (calls.get(text) ?? 0) + 1);
      if (!text.startsWith("line") || !hold) return answer(res, text);
      let done = false;
      res.on("close", () => !done && closedEarly++);
      held.push(() => ((done = true), answer(res, text)));
      for (const f of onHeld) f();
    });
  });
  return {
    server,
    calls,
    held,
    get closedEarly() {
      return closedEarly;
    },
    /** answers every held line and every later one at once */
    letGo() {
      hold = false;
      held.splice(0).forEach((f) => f());
    },
    waitHeld: (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => held.length >= n && (onHeld.delete(check), resolve());
        onHeld.add(check);
        check();
      }),
  };
})();

beforeAll(async () => {
  await new Promise<void>((r) => upstream.server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`;
  const store = createStore({ driver: "memory" });
  const record = store.recordUsage.bind(store);
  store.recordUsage = (row, scopes) => (rows.push(row), record(row, scopes));
  gw = await startGateway(
    {
      // two slots: one kept for interactive calls, one a batch line may take
      channels: [{ name: "c", baseUrl: url, models: ["m"], concurrency: 2, healthCheck: { intervalMs: 0 } }],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500 }],
      routing: { maxAttempts: 1 },
      apps: [{ id: "a", model: "m" }],
      apiKeys: [{ name: "ka", kind: "app", appId: "a", key: KEY }],
      batches: { concurrency: 4, reserve: 0 },
    },
    { store },
  );
});
afterAll(async () => {
  upstream.letGo();
  await gw?.close();
  await gw?.store.close();
  upstream.server.closeAllConnections();
  await new Promise<void>((r) => upstream.server.close(() => r()));
});

const chat = (text: string) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: text }] }),
  });

describe("batch lines preempted by interactive calls", () => {
  it("the second interactive call takes the running line's slot; the line runs again; one usage row per line", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const text = [0, 1, 2].map((i) => JSON.stringify({ custom_id: `c-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user", content: `line ${i}` }] } })).join("\n");
    const file = await client.files.create({ file: await toFile(Buffer.from(text), "in.jsonl"), purpose: "batch" });
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await upstream.waitHeld(1);
    expect(upstream.held).toHaveLength(1); // the reserve kept the other slot

    // both answered while the held line's answer has not been sent: the second took its slot
    const answers = await Promise.all([chat("first"), chat("second")]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    expect(upstream.closedEarly).toBe(1);

    upstream.letGo();
    const end = Date.now() + 20_000;
    let done = await client.batches.retrieve(batch.id);
    while (done.status !== "completed" && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 25));
      done = await client.batches.retrieve(batch.id);
    }
    expect(done.status).toBe("completed");
    expect(done.request_counts).toMatchObject({ total: 3, completed: 3, failed: 0 });
    const out = (await (await client.files.content(done.output_file_id!)).text()).trim().split("\n").map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number } });
    expect(out.map((l) => [l.custom_id, l.response.status_code]).sort()).toEqual([["c-0", 200], ["c-1", 200], ["c-2", 200]]);
    // one line ran twice at the model server, and every line has exactly one usage row
    expect([...upstream.calls].filter(([t]) => t.startsWith("line")).map(([, n]) => n).sort()).toEqual([1, 1, 2]);
    const stored = await gw.store.searchUsage({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 100, offset: 0, order: { by: "id", desc: false } });
    expect(stored.rows.filter((r) => r.batchId === batch.id).map((r) => r.customId).sort()).toEqual(["c-0", "c-1", "c-2"]);
    // the interactive calls' rows by the pipeline, none for the preempted run
    expect(rows.filter((r) => r.batchId == null)).toHaveLength(2);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/^sluice_batch_lines_total\{endpoint="\/v1\/chat\/completions",outcome="preempted"\} 1$/m);
  });
});
