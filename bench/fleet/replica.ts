// One replica of a simulated vLLM fleet, in a process of its own (docs/performance.md#the-fleet-simulator):
// POST /v1/chat/completions (whole or streamed, usage with prompt_tokens_details.cached_tokens),
// GET /metrics (vLLM's names), GET /stats (requests, prompt and cached tokens so far), GET /v1/models
// and /health. Prints `READY <port>` once listening.
// Usage: tsx bench/fleet/replica.ts --port 0 --name r1 [--max-running N] [--block-size 16]
//   [--cache-blocks B] [--prefill-us-per-token X] [--decode-ms-per-token Y] [--slow F]
//   [--max-batched-tokens T] [--scheduling-policy fcfs|priority] [--model NAME]
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { Engine, type Sequence } from "./engine.js";
import { blockHashes, tokensOf } from "./prefix-cache.js";

/** Each parameter's default and where it comes from: docs/performance.md#the-fleet-simulator. */
const { values: args } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    name: { type: "string", default: "replica" },
    model: { type: "string", default: "sim" },
    "max-running": { type: "string", default: "256" },
    "block-size": { type: "string", default: "16" },
    "cache-blocks": { type: "string", default: "28000" },
    "max-batched-tokens": { type: "string", default: "8192" },
    "prefill-us-per-token": { type: "string", default: "100" },
    "decode-ms-per-token": { type: "string", default: "20" },
    slow: { type: "string", default: "1" },
    "scheduling-policy": { type: "string", default: "fcfs" },
  },
});
const positive = (name: keyof typeof args): number => {
  const n = Number(args[name]);
  if (!(n >= 0) || !Number.isFinite(n)) throw new Error(`--${name} must be a number ≥ 0, got ${String(args[name])}`);
  return n;
};

const engine = new Engine({
  maxRunning: Math.max(1, positive("max-running")),
  blockSize: Math.max(1, positive("block-size")),
  cacheBlocks: Math.max(1, positive("cache-blocks")),
  maxBatchedTokens: Math.max(1, positive("max-batched-tokens")),
  prefillUsPerToken: positive("prefill-us-per-token"),
  decodeMsPerToken: positive("decode-ms-per-token"),
  slow: positive("slow"),
  priorityPolicy: args["scheduling-policy"] === "priority",
});
const NAME = args.name!;
const MODEL = args.model!;
const CREATED = Math.floor(Date.now() / 1000);
/** each 4 characters: one token of the simulator's tokenizer */
const WORDS = [" the", " cat", " sat", " on ", " a  ", " mat", " and", " ate"];
const MAX_BODY_BYTES = 64 * 1024 * 1024;
const DEFAULT_MAX_TOKENS = 16;
let ids = 0;

interface ChatBody {
  model?: string;
  messages?: Array<{ role?: string; content?: unknown }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  max_completion_tokens?: number;
  priority?: number;
}

const server = createServer((req, res) => {
  res.on("error", () => {});
  req.on("error", () => res.destroy());
  if (req.method === "POST" && req.url?.startsWith("/v1/chat/completions")) return void readBody(req, res);
  req.resume();
  if (req.url === "/metrics") return send(res, 200, metricsText(), "text/plain; version=0.0.4");
  if (req.url === "/stats") return send(res, 200, JSON.stringify({ name: NAME, ...engine.stats, running: engine.running, waiting: engine.waiting }));
  if (req.url === "/v1/models") return send(res, 200, JSON.stringify({ object: "list", data: [{ id: MODEL, object: "model", owned_by: "vllm" }] }));
  if (req.url === "/health") return send(res, 200, "");
  send(res, 404, vllmError("Not Found", 404));
});
server.keepAliveTimeout = 120_000;

function readBody(req: IncomingMessage, res: ServerResponse): void {
  const parts: Buffer[] = [];
  let bytes = 0;
  req.on("data", (part: Buffer) => {
    bytes += part.length;
    if (bytes > MAX_BODY_BYTES) return void req.destroy();
    parts.push(part);
  });
  req.on("end", () => {
    let body: ChatBody;
    try {
      body = JSON.parse(Buffer.concat(parts).toString("utf8")) as ChatBody;
    } catch {
      return send(res, 400, vllmError("the body is not JSON", 400));
    }
    answer(body, res);
  });
}

/** The prompt as a chat template renders it: each message's role marker, then its text. */
function render(messages: ChatBody["messages"]): string {
  let text = "";
  for (const m of messages ?? []) {
    const content = typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p: { text?: unknown }) => (typeof p?.text === "string" ? p.text : "")).join("") : "";
    text += `<|${m.role ?? "user"}|>\n${content}\n`;
  }
  return `${text}<|assistant|>\n`;
}

function answer(body: ChatBody, res: ServerResponse): void {
  if (!Array.isArray(body.messages) || body.messages.length === 0) return send(res, 400, vllmError("messages: a list is required", 400));
  const priority = typeof body.priority === "number" ? body.priority : 0;
  // vLLM refuses a priority unless started with --scheduling-policy priority
  if (priority !== 0 && !engine.o.priorityPolicy) return send(res, 400, vllmError("Priority scheduling is not enabled.", 400));
  const prompt = render(body.messages);
  const promptTokens = tokensOf(prompt);
  const maxTokens = Math.max(1, Math.floor(body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS));
  if (!engine.fits(promptTokens, maxTokens)) return send(res, 400, vllmError(`the prompt (${promptTokens} tokens) and max_tokens do not fit in the KV cache`, 400));
  const id = `chatcmpl-${NAME}-${++ids}`;
  const model = body.model ?? MODEL;
  const finishReason = body.max_tokens !== undefined || body.max_completion_tokens !== undefined ? "length" : "stop";
  let text = "";
  const usage = () => ({
    prompt_tokens: promptTokens,
    completion_tokens: Math.ceil(text.length / 4),
    total_tokens: promptTokens + Math.ceil(text.length / 4),
    prompt_tokens_details: { cached_tokens: seq.cachedTokens ?? 0 },
  });
  const chunk = (choices: unknown[], extra: object = {}) => `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: CREATED, model, choices, ...extra })}\n\n`;
  const seq: Sequence = {
    promptTokens,
    hashes: blockHashes(prompt, engine.o.blockSize),
    maxTokens,
    priority,
    onToken(i) {
      const word = WORDS[i % WORDS.length]!;
      text += word;
      if (!body.stream) return;
      if (i === 0) res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(chunk([{ index: 0, delta: i === 0 ? { role: "assistant", content: word } : { content: word }, finish_reason: null }]));
    },
    onDone() {
      if (!body.stream) {
        const message = { role: "assistant", content: text };
        return send(res, 200, JSON.stringify({ id, object: "chat.completion", created: CREATED, model, choices: [{ index: 0, message, finish_reason: finishReason }], usage: usage() }));
      }
      res.write(chunk([{ index: 0, delta: {}, finish_reason: finishReason }]));
      if (body.stream_options?.include_usage) res.write(chunk([], { usage: usage() }));
      res.end("data: [DONE]\n\n");
    },
  };
  res.on("close", () => engine.abort(seq));
  engine.submit(seq);
}

function metricsText(): string {
  const label = `{model_name="${MODEL}"}`;
  const lines: Array<[string, string, number]> = [
    ["vllm:num_requests_running", "gauge", engine.running],
    ["vllm:num_requests_waiting", "gauge", engine.waiting],
    ["vllm:kv_cache_usage_perc", "gauge", engine.kvUsage],
    ["vllm:prefix_cache_queries_total", "counter", engine.stats.promptTokens],
    ["vllm:prefix_cache_hits_total", "counter", engine.stats.cachedTokens],
    ["vllm:prompt_tokens_total", "counter", engine.stats.promptTokens],
    ["vllm:generation_tokens_total", "counter", engine.stats.generationTokens],
  ];
  // what the KV cache holds, as vLLM tells it: an info gauge whose labels carry the figures
  const cacheConfig = `# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size="${engine.o.blockSize}",num_gpu_blocks="${engine.o.cacheBlocks}"} 1\n`;
  return lines.map(([name, type, value]) => `# TYPE ${name.replace(/_total$/, "")} ${type}\n${name}${label} ${value}\n`).join("") + cacheConfig;
}

const vllmError = (message: string, code: number) => JSON.stringify({ object: "error", message, type: "BadRequestError", param: null, code });

function send(res: ServerResponse, status: number, body: string, type = "application/json"): void {
  if (res.headersSent || res.destroyed) return void res.destroy();
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

server.on("error", (err) => {
  console.error(`replica ${NAME}: ${err.message}`);
  process.exit(1);
});
server.listen(Number(args.port), "127.0.0.1", () => console.log(`READY ${(server.address() as AddressInfo).port}`));
