// The benchmark's model server, in a process of its own so that its CPU is neither the proxies' nor
// the load generator's. It answers by the request's model name (bench/models.ts): whole JSON
// answers, streams whose every SSE frame is its own socket write (the next one only after the event
// loop turned, or 2 ms later for the realistic model), streams that hold after their first chunk,
// and embeddings. Requests under /flaky fail every 5th attempt with a 500 before any header; the
// `user` field of each failed request is kept for GET /bench/failed (read and cleared).
// Usage: node .bench-out/upstream-process.js --port N
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { setTimeout as sleep, setImmediate as turn } from "node:timers/promises";
import { parseArgs } from "node:util";
import { EMBEDDING_DIMENSIONS, FLAKY_EVERY, FLAKY_PREFIX, MODELS, REALISTIC_CHUNK_GAP_MS, REALISTIC_CHUNKS, STREAM_CHUNKS } from "./models.js";

const CREATED = Math.floor(Date.now() / 1000);
const JSON_TYPE = "application/json";
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };
const MAX_CACHED = 256;
const WORDS = ["The", " answer", " is", " the", " same", " every", " time", ",", " word", " by", " word", "."];

let flakyAttempts = 0;
let failedUsers: string[] = [];
const cache = new Map<string, Buffer>();

const server = createServer((req, res) => {
  res.on("error", () => {});
  if (req.method !== "POST") return void answerGet(req, res);
  const parts: Buffer[] = [];
  req.on("data", (part: Buffer) => parts.push(part));
  req.on("end", () => void answerPost(req, res, parts.length === 1 ? parts[0]! : Buffer.concat(parts)).catch(() => res.destroy()));
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 121_000;
server.requestTimeout = 0; // held streams last as long as the bench wants them

function answerGet(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  if (req.url === "/bench/failed") {
    const users = failedUsers;
    failedUsers = [];
    return send(res, 200, Buffer.from(JSON.stringify(users)));
  }
  send(res, 200, Buffer.from('{"object":"list","data":[]}')); // /v1/models (health checks), /healthz
}

async function answerPost(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
  const path = req.url ?? "/";
  if (path.startsWith(FLAKY_PREFIX) && ++flakyAttempts % FLAKY_EVERY === 0) {
    failedUsers.push(stringField(body, "user") ?? "");
    return send(res, 500, Buffer.from('{"error":{"message":"the bench made this attempt fail","type":"server_error","code":null,"param":null}}'));
  }
  const model = stringField(body, "model") ?? "";
  // a token is about 4 bytes of English; the proxies bill what the upstream reports
  const promptTokens = Math.max(1, Math.ceil(body.length / 4));
  if (path.endsWith("/v1/embeddings")) return send(res, 200, cached(`e|${model}|${body.length}`, () => embeddings(model, body)));
  if (!path.endsWith("/v1/chat/completions")) return send(res, 404, Buffer.from('{"error":{"message":"not found","type":"invalid_request_error","code":null,"param":null}}'));

  const chunks = model === MODELS.realistic ? REALISTIC_CHUNKS : STREAM_CHUNKS;
  if (body.indexOf('"stream":true') < 0) return send(res, 200, cached(`n|${model}|${promptTokens}`, () => completion(model, chunks, promptTokens)));

  const frames = streamFrames(model, chunks);
  const usage = body.indexOf('"include_usage":true') >= 0 ? frame(model, [], { usage: usageOf(promptTokens, chunks) }) : undefined;
  res.writeHead(200, SSE_HEADERS);
  if (model === MODELS.hold) return void res.write(frames[0]); // held until the client goes away
  const gapMs = model === MODELS.realistic ? REALISTIC_CHUNK_GAP_MS : 0;
  for (const piece of [...frames, ...(usage ? [usage] : []), DONE]) {
    if (res.destroyed) return;
    res.write(piece);
    await (gapMs > 0 ? sleep(gapMs) : turn());
  }
  res.end();
}

function send(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { "content-type": JSON_TYPE, "content-length": body.length });
  res.end(body);
}

/** A top-level string field read from the raw JSON without parsing it: quotes inside strings are
 *  escaped, so `"name":"` only ever starts the field itself. */
function stringField(body: Buffer, name: string): string | undefined {
  const key = `"${name}":"`;
  const at = body.indexOf(key);
  if (at < 0) return undefined;
  const end = body.indexOf('"', at + key.length);
  return end < 0 ? undefined : body.toString("utf8", at + key.length, end);
}

function cached(key: string, build: () => Buffer): Buffer {
  let hit = cache.get(key);
  if (!hit) {
    if (cache.size >= MAX_CACHED) cache.clear();
    hit = build();
    cache.set(key, hit);
  }
  return hit;
}

const words = (n: number) => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]!);
const usageOf = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

function completion(model: string, chunks: number, promptTokens: number): Buffer {
  const message = { role: "assistant", content: words(chunks).join("") };
  const choices = [{ index: 0, message, logprobs: null, finish_reason: "stop" }];
  return Buffer.from(JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion", created: CREATED, model, choices, usage: usageOf(promptTokens, chunks) }));
}

const DONE = Buffer.from("data: [DONE]\n\n");

function frame(model: string, choices: unknown[], extra: object = {}): Buffer {
  return Buffer.from(`data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: CREATED, model, choices, ...extra })}\n\n`);
}

/** The content frames (vLLM's shape: one word each) and the finish frame, built once per model. */
const framesByModel = new Map<string, Buffer[]>();
function streamFrames(model: string, chunks: number): Buffer[] {
  let frames = framesByModel.get(model);
  if (!frames) {
    frames = words(chunks).map((content, i) => frame(model, [{ index: 0, delta: i === 0 ? { role: "assistant", content } : { content }, logprobs: null, finish_reason: null }]));
    frames.push(frame(model, [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]));
    if (framesByModel.size >= MAX_CACHED) framesByModel.clear();
    framesByModel.set(model, frames);
  }
  return frames;
}

function embeddings(model: string, body: Buffer): Buffer {
  const input = (JSON.parse(body.toString("utf8")) as { input?: unknown }).input;
  const inputs = Array.isArray(input) ? input : [input];
  const chars = inputs.reduce<number>((n, s) => n + (typeof s === "string" ? s.length : Array.isArray(s) ? s.length * 4 : 0), 0);
  const tokens = Math.max(1, Math.ceil(chars / 4));
  // floats printed as a model server prints them: 9-10 significant digits
  const data = inputs.map((_, index) => ({
    object: "embedding",
    index,
    embedding: Array.from({ length: EMBEDDING_DIMENSIONS }, (_, d) => Number((Math.sin(index * 7919 + d) * 0.05).toPrecision(9))),
  }));
  return Buffer.from(JSON.stringify({ object: "list", data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } }));
}

const { values } = parseArgs({ options: { port: { type: "string" } } });
server.listen({ host: "127.0.0.1", port: Number(values.port ?? 0), backlog: 8192 });
process.once("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
