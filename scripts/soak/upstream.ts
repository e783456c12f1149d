// The soak's two model servers (channels "a" and "b" of one model), in one child process. Each
// streams its answer a chunk at a time like a model, fails a share of attempts before its headers
// (500, connection reset, 429 with Retry-After), cuts a share of streams after some chunks, and
// records per attempt what it produced, counted with the gateway's tokenizer. Prints
// `ready {"a":port,"b":port}` once both listen; GET /soak/attempts returns the records.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { countMessages, countText } from "../../src/tokens/counter.js";
import type { ChatMessage } from "../../src/chat/request-schema.js";
import { CHANNELS, DEFAULT_FAULTS, ID_PATTERN, SOAK_TOKENIZER, between, type ChannelName, type FaultProfile } from "./setup.js";

/** How one attempt ended, as the upstream saw it. */
export type AttemptOutcome = "500" | "reset" | "429" | "ok" | "cut" | "closed";

/** One attempt: [request id, outcome, prompt tokens, completion tokens produced, streamed (1/0)]. */
export type AttemptRecord = [id: number, outcome: AttemptOutcome, prompt: number, produced: number, stream: 0 | 1];

const WORDS = (
  "the a model answer token stream gateway channel of to and in is it that for on with as was at by " +
  "river mountain quiet signal Retry-After café naïve über 東京 模型 🙂 résumé, data; (note) 42 3.14 " +
  "however: therefore. Yes! no? well... — “quoted” 'single' fine-tuned GPU's \"escaped\" back\\slash tab\tend"
).split(" ");
const CREATED = Math.floor(Date.now() / 1000);

function faultProfile(): FaultProfile {
  const given = process.env.SOAK_FAULTS;
  return given ? { ...DEFAULT_FAULTS, ...(JSON.parse(given) as Partial<FaultProfile>) } : DEFAULT_FAULTS;
}

function startChannel(channel: ChannelName, faults: FaultProfile) {
  const attempts: AttemptRecord[] = [];
  const server = createServer((req, res) => {
    res.on("error", () => {}); // the gateway may reset a connection it gave up on
    req.on("error", () => {});
    void serve(req, res).catch(() => res.destroy());
  });
  server.keepAliveTimeout = 60_000;
  server.requestTimeout = 0;

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === "GET" && req.url === "/soak/attempts") return json(res, 200, JSON.stringify(attempts));
    if (req.method === "GET" && req.url?.endsWith("/v1/models")) return json(res, 200, '{"object":"list","data":[]}');
    const body = JSON.parse((await readBody(req)).toString("utf8")) as { messages: ChatMessage[]; stream?: boolean };
    const last = body.messages.at(-1)?.content;
    const id = Number(ID_PATTERN.exec(typeof last === "string" ? last : "")?.[1] ?? -1);
    const stream = body.stream === true;
    const record = (outcome: AttemptOutcome, prompt = 0, produced = 0) => void attempts.push([id, outcome, prompt, produced, stream ? 1 : 0]);

    // 1. A share of attempts fails before any header, a little later as a busy server would.
    if (Math.random() < faults.failBeforeHeaders) {
      await sleep(between([0, 150]));
      const kind = (["500", "reset", "429"] as const)[Math.floor(Math.random() * 3)]!;
      record(kind);
      if (kind === "reset") return void req.socket.resetAndDestroy();
      if (kind === "429") return json(res, 429, errorBody("busy"), { "retry-after": "1" });
      return json(res, 500, errorBody("exploded"));
    }
    const prompt = countMessages(body.messages, SOAK_TOKENIZER);
    const pieces = Array.from({ length: between(faults.chunks) }, () => words(between([1, 3])));
    const produced = (n: number) => countText(pieces.slice(0, n).join(""), SOAK_TOKENIZER);

    // 2. A whole answer: all or nothing, after the time it takes to generate.
    if (!stream) {
      const conn = watchClose(res);
      await Promise.race([sleep(between(faults.wholeMs)), conn.closed]);
      if (conn.gone()) return record("closed", prompt, 0);
      const completion = produced(pieces.length);
      record("ok", prompt, completion);
      return json(res, 200, chunk([{ index: 0, message: { role: "assistant", content: pieces.join("") }, finish_reason: "stop" }], usage(prompt, completion), "chat.completion"));
    }

    // 3. A stream, a chunk at a time; cut after `cutAt` chunks, or ended with usage and [DONE].
    const cutAt = Math.random() < faults.cutMidStream && pieces.length > 1 ? between([1, pieces.length - 1]) : -1;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const conn = watchClose(res);
    for (let i = 0; i < pieces.length; i++) {
      if (i > 0) await Promise.race([sleep(between(faults.chunkMs)), conn.closed]);
      // a chunk counts as produced once written to a live connection
      if (conn.gone()) return record("closed", prompt, produced(i));
      const delta = i === 0 ? { role: "assistant", content: pieces[i] } : { content: pieces[i] };
      const frame = `data: ${chunk([{ index: 0, delta, finish_reason: null }])}\n\n`;
      if (i + 1 === cutAt) {
        record("cut", prompt, produced(i + 1));
        // closed once the chunk is in the kernel's hands, so that the gateway receives all of it
        return void res.write(frame, () => res.destroy());
      }
      if (!res.write(frame)) await Promise.race([drained(res), conn.closed]);
    }
    if (conn.gone()) return record("closed", prompt, produced(pieces.length));
    const completion = produced(pieces.length);
    record("ok", prompt, completion);
    res.end(
      `data: ${chunk([{ index: 0, delta: {}, finish_reason: "stop" }])}\n\n` +
        `data: ${chunk([], usage(prompt, completion))}\n\n` +
        "data: [DONE]\n\n",
    );
  }

  return { server, attempts };
}

function words(n: number): string {
  let out = "";
  for (let i = 0; i < n; i++) out += " " + WORDS[Math.floor(Math.random() * WORDS.length)];
  return out;
}

function chunk(choices: unknown[], extra: object = {}, object = "chat.completion.chunk"): string {
  return JSON.stringify({ id: "chatcmpl-soak", object, created: CREATED, model: "soak-upstream", choices, ...extra });
}

const usage = (prompt: number, completion: number) => ({ usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
const errorBody = (what: string) => JSON.stringify({ error: { message: `upstream ${what}`, type: "server_error", code: null, param: null } });

function json(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** `closed` resolves when the gateway closes the connection before the answer ended; `gone()`
 *  says whether it has (or the socket is already destroyed, before the event is emitted). */
function watchClose(res: ServerResponse) {
  let gone = false;
  const closed = new Promise<void>((resolve) =>
    res.once("close", () => {
      gone = !res.writableFinished;
      resolve();
    }),
  );
  return { closed, gone: () => gone || res.destroyed || res.socket?.destroyed === true };
}

function drained(res: ServerResponse): Promise<"drained"> {
  return new Promise((resolve) => res.once("drain", () => resolve("drained")));
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => resolve(Buffer.concat(parts)));
    req.on("error", reject);
  });
}

async function main(): Promise<void> {
  const faults = faultProfile();
  const ports: Partial<Record<ChannelName, number>> = {};
  for (const name of CHANNELS) {
    const { server } = startChannel(name, faults);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: "127.0.0.1", port: 0, backlog: 4096 }, resolve);
    });
    ports[name] = (server.address() as AddressInfo).port;
  }
  console.log(`ready ${JSON.stringify(ports)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
