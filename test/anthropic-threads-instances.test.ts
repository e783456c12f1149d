// A message thread continued on any instance (docs/claude-code.md#message-threads): two gateways on
// one PostgreSQL database (test/support/postgres.ts, a real server), the SDK's tool runner sending
// its turns to each in turn — every turn after the first continues a thread the other instance kept,
// and the loop ends with every file written; a thread's row is no Responses API response. SQLite
// serves one gateway process (docs/store.md#sqlite): there a thread outlives a restart.
import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createStore } from "../src/store/index.js";
import type { StoreConfig } from "../src/config/schema.js";
import { fileWriterScript, WRITE_FILE } from "./support/file-writer-upstream.js";
import { DEV_KEY, THRIFTY_KEY, startMessagesGateway, type MessagesGateway } from "./support/messages-gateway.js";
import { usePostgres } from "./support/postgres.js";

const FILES = [
  { path: "one.ts", content: "export const one = 1;" },
  { path: "two.ts", content: "export const two = 2;" },
  { path: "three.ts", content: "export const three = 3;" },
  { path: "four.ts", content: "export const four = 4;" },
];

const postgres = usePostgres();
const dir = mkdtempSync(join(tmpdir(), "sluice-threads-instances-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Two gateways, each with a store of its own over the same records. */
async function twoInstances(store: StoreConfig): Promise<MessagesGateway[]> {
  return Promise.all([0, 1].map(() => startMessagesGateway(fileWriterScript(FILES), {}, { store: createStore(store) })));
}

/** The SDK, its n-th request sent to instance n % 2; the instance and thread of each, in order. */
function alternating(instances: MessagesGateway[], key = DEV_KEY) {
  const sent: Array<{ instance: number; thread: unknown; status: number }> = [];
  const fetchEach = async (input: string | URL | Request, init?: RequestInit) => {
    const instance = sent.length % 2;
    const url = new URL(String(input));
    const res = await fetch(instances[instance]!.url + url.pathname + url.search, init);
    sent.push({ instance, thread: (JSON.parse(String(init?.body)) as { thread?: unknown }).thread, status: res.status });
    return res;
  };
  return { sdk: new Anthropic({ baseURL: "http://gateway.invalid", apiKey: key, maxRetries: 0, fetch: fetchEach as typeof fetch }), sent };
}

async function runLoop(instances: MessagesGateway[], stream: boolean) {
  const files = new Map<string, string>();
  const tool = betaTool({
    name: WRITE_FILE,
    description: "Write a file",
    inputSchema: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
    run: ({ path, content }) => {
      files.set(path, content);
      return `wrote ${path}`;
    },
  });
  const { sdk, sent } = alternating(instances);
  const final = await sdk.beta.messages.toolRunner({ model: "claude-sonnet-5", max_tokens: 200, system: "Write the files.", tools: [tool], messages: [{ role: "user", content: "Write four files." }], stream }).runUntilDone();
  return { final, files, sent };
}

describe("message threads across two gateways on one PostgreSQL database", () => {
  const storeConfig = async (): Promise<StoreConfig> => ({ driver: "postgres", url: await postgres.createDatabase() });
  // Before threads were served, the second turn reached the model as a lone tool message: 400.
  it.each([false, true])("continues on each instance the thread the other kept (stream: %s)", async (stream) => {
    const instances = await twoInstances(await storeConfig());
    try {
      const { final, files, sent } = await runLoop(instances, stream);
      expect(final.content).toEqual([{ type: "text", text: "Wrote 4 files." }]);
      expect(Object.fromEntries(files)).toEqual(Object.fromEntries(FILES.map((f) => [f.path, f.content])));
      expect(sent.map((s) => [s.instance, s.status, (s.thread as { type: string }).type])).toEqual([
        [0, 200, "create"],
        [1, 200, "continue"],
        [0, 200, "continue"],
        [1, 200, "continue"],
        [0, 200, "continue"],
      ]);
      // each instance's model got the whole conversation
      const last = instances[0]!.upstream.requests.at(-1)!.body;
      expect(last.messages).toHaveLength(2 + 2 * FILES.length);
      expect(last.tools).toHaveLength(1);
      expect(instances.map((i) => i.rows.length)).toEqual([3, 2]);
    } finally {
      await Promise.all(instances.map((i) => i.close()));
    }
  });

  // before: the continue by another key was a 200, and GET /v1/responses/{msg id} found nothing to hide
  it("answers thread_not_found on the other instance for another key, and keeps threads out of /v1/responses", async () => {
    const instances = await twoInstances(await storeConfig());
    try {
      const first = await alternating(instances).sdk.beta.messages.create({ model: "claude-sonnet-5", max_tokens: 50, messages: [{ role: "user", content: "hi" }], thread: { type: "create" } });
      const other = alternating([instances[1]!, instances[1]!], THRIFTY_KEY).sdk;
      const refused = await other.beta.messages
        .create({ model: "claude-sonnet-5", max_tokens: 50, messages: [{ role: "user", content: "again" }], thread: { type: "continue", previous_message_id: first.id } })
        .catch((e: unknown) => e as InstanceType<typeof Anthropic.APIError>);
      expect(refused).toBeInstanceOf(Anthropic.NotFoundError);
      expect((refused as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: "not_found_error", details: { error_code: "thread_not_found" } } });
      // the owner's key reads it on the other instance; the Responses API does not
      const res = await fetch(`${instances[1]!.url}/v1/responses/${first.id}`, { headers: { authorization: `Bearer ${DEV_KEY}` } });
      expect(res.status).toBe(404);
      const del = await fetch(`${instances[1]!.url}/v1/responses/${first.id}`, { method: "DELETE", headers: { authorization: `Bearer ${DEV_KEY}` } });
      expect(del.status).toBe(404);
      const again = await alternating([instances[1]!, instances[1]!]).sdk.beta.messages.create({ model: "claude-sonnet-5", max_tokens: 50, messages: [{ role: "user", content: "again" }], thread: { type: "continue", previous_message_id: first.id } });
      expect(again.type).toBe("message");
    } finally {
      await Promise.all(instances.map((i) => i.close()));
    }
  });
});

describe("message threads on SQLite", () => {
  // before: the continue reached the model as the last question alone, without the conversation
  it("continue after a restart on the same file the thread kept before it", async () => {
    const path = join(dir, "threads.db");
    const says = () => ({ chunks: [{ choices: [{ index: 0, delta: { content: "Noted." } }] }], finishReason: "stop", usage: { prompt_tokens: 9, completion_tokens: 2 } });
    let current = await startMessagesGateway(says, {}, { store: createStore({ driver: "sqlite", path }) });
    const fetchCurrent = async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(String(input));
      return fetch(current.url + url.pathname + url.search, init);
    };
    const sdk = new Anthropic({ baseURL: "http://gateway.invalid", apiKey: DEV_KEY, maxRetries: 0, fetch: fetchCurrent as typeof fetch });
    const thread = sdk.beta.messages.thread({ model: "claude-sonnet-5", max_tokens: 50, system: "Remember." });
    const first = await thread.send({ role: "user", content: "my name is Ada" });
    await current.close();
    current = await startMessagesGateway(says, {}, { store: createStore({ driver: "sqlite", path }) });
    try {
      await thread.send({ role: "user", content: "what is my name?" });
      expect(current.upstream.requests.map((r) => r.body.messages)).toEqual([
        [
          { role: "system", content: "Remember." },
          { role: "user", content: "my name is Ada" },
          { role: "assistant", content: "Noted." },
          { role: "user", content: "what is my name?" },
        ],
      ]);
    } finally {
      await current.close();
    }
  });
});
