// A micro-benchmark of the JSON byte scanner (src/json/scan.ts) where the gateway uses it, in one
// process, no HTTP: a 200 KB chat body read in pieces with its content left raw (parseLarge), a body read
// whole (depth check, decode, JSON.parse), a 1 MB embeddings answer scanned (scanEmbeddings), and a
// stream of 1,000 chunks relayed (SseRelay, which checks every event's shape). Time per operation,
// the quickest of many short rounds.
// It runs the built dist/, as the gateway does (under tsx's loader src/ measures otherwise):
//   npm run build --silent && npx tsx bench/json-scan.ts
import { prose } from "./chat-request.js";

const built = (path: string) => import(new URL(`../dist/${path}`, import.meta.url).href);
const { SseRelay } = (await built("stream/sse-relay.js")) as typeof import("../src/stream/sse-relay.js");
const { scanEmbeddings } = (await built("embeddings/answer.js")) as typeof import("../src/embeddings/answer.js");
const { parseLarge } = (await built("http/body.js")) as typeof import("../src/http/body.js");
const { JsonScanner } = (await built("json/scan.js")) as typeof import("../src/json/scan.js");

const ROUNDS = 200;

/**
 * Microseconds per call of `run`: the quickest of ROUNDS rounds of about 2 ms each. Wall time, as
 * the CPU time a process is charged moves in whole scheduler ticks; a round that another process
 * interrupts is simply not the quickest.
 */
async function measure(run: () => unknown): Promise<number> {
  const round = async (calls: number) => {
    const start = process.hrtime.bigint();
    for (let k = 0; k < calls; k++) {
      const ran = run();
      if (ran instanceof Promise) await ran; // a parse in pieces: its turns of the event loop counted too
    }
    return Number(process.hrtime.bigint() - start) / 1000;
  };
  let calls = 1;
  while ((await round(calls)) < 2000) calls *= 2;
  let best = Infinity;
  for (let r = 0; r < ROUNDS; r++) best = Math.min(best, (await round(calls)) / calls);
  return best;
}

function chatBody(bytes: number): Buffer {
  const envelope = (content: string) => JSON.stringify({ model: "m1", messages: [{ role: "system", content: "Be brief." }, { role: "user", content }], stream: false });
  return Buffer.from(envelope(prose(bytes - envelope("").length)));
}

/** An embeddings answer as a model server prints it: `inputs` vectors of 9-digit floats. */
function embeddingsAnswer(inputs: number, dimensions: number): Buffer {
  const data = Array.from({ length: inputs }, (_, index) => ({
    object: "embedding",
    index,
    embedding: Array.from({ length: dimensions }, (_, d) => Number((Math.sin(index * 7919 + d) * 0.05).toPrecision(9))),
  }));
  return Buffer.from(JSON.stringify({ object: "list", data, model: "emb", usage: { prompt_tokens: 3200, total_tokens: 3200 } }));
}

/** The body path of readJsonBody (src/http/body.ts) when nothing stays raw. */
function readWhole(buf: Buffer): unknown {
  if (new JsonScanner(buf).nestingExceeds(64)) throw new Error("too deep");
  return JSON.parse(buf.toString("utf8"));
}

function streamRegions(): Buffer[] {
  const event = (i: number) => `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m1","choices":[{"index":0,"delta":{"content":"token ${i} "},"finish_reason":null}]}\n\n`;
  // a few events per read, as they arrive from an upstream
  return Array.from({ length: 1000 }, (_, i) => Buffer.from(i % 4 === 0 ? event(i) + event(i + 1) : event(i)));
}

const body200 = chatBody(200 * 1024);
const body20 = chatBody(20 * 1024);
const conversation = Buffer.from(JSON.stringify({ model: "m1", messages: Array.from({ length: 100 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: prose(180, i + 1) })) }));
const answer = embeddingsAnswer(64, 1536);
const regions = streamRegions();
const raw200 = (await parseLarge(body200, 64, true)) as { messages: Array<{ content: unknown }> };
if (typeof raw200.messages[1]!.content === "string" || !scanEmbeddings(answer, 64)) throw new Error("the samples are not what the gateway reads");

const rows: Array<[string, number, () => unknown]> = [
  ["200 KB chat body in pieces, content raw (parseLarge)", body200.length, () => parseLarge(body200, 64, true)],
  ["200 KB chat body read whole (depth, decode, parse)", body200.length, () => readWhole(body200)],
  ["20 KB chat body read whole", body20.length, () => readWhole(body20)],
  ["20 KB, 100 messages, read whole", conversation.length, () => readWhole(conversation)],
  ["1 MB embeddings answer (scanEmbeddings)", answer.length, () => scanEmbeddings(answer, 64)],
  [
    "1,000 stream chunks relayed (SseRelay)",
    regions.reduce((n, r) => n + r.length, 0),
    () => {
      const relay = new SseRelay({ detail: false, includeUsage: false, model: "m1", write: () => true, onFirstContent: () => {} });
      for (const region of regions) relay.push(region);
    },
  ],
];
for (const [name, bytes, run] of rows) console.log(`${name.padEnd(52)} ${String(bytes).padStart(8)} B  ${(await measure(run)).toFixed(1).padStart(9)} µs`);
