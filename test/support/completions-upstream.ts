// A small real legacy completions server (node:http) for tests, in vLLM's and OpenAI's shape:
// POST …/v1/completions answers a `text_completion` (every prompt × n choices; `echo` puts the prompt
// first), whole or as SSE chunks (`choices[].text`, a last chunk with finish_reason, a usage chunk
// when `stream_options.include_usage`, then `data: [DONE]`), or a stream broken off. Records what it
// was sent.
import { startJsonServer } from "./json-server.js";

export interface CompletionsBehaviour {
  /** the answer to a prompt; with a `suffix`, the fill-in-the-middle text is `fill` */
  text: string;
  fill: string;
  /** pieces the text is streamed in */
  chunks: number;
  /** usage reported; false reports none */
  usage: { prompt_tokens: number; completion_tokens: number } | false;
  status: number;
  /** a stream broken off after this many chunks (null: whole) */
  cutAfter: number | null;
  /** answer a stream request with one JSON answer, as some servers do */
  ignoreStream: boolean;
}

export interface CompletionsUpstream {
  url: string;
  requests: Array<Record<string, unknown>>;
  behave(change: Partial<CompletionsBehaviour>): void;
  close(): Promise<void>;
}

export async function startCompletionsUpstream(initial: Partial<CompletionsBehaviour> = {}): Promise<CompletionsUpstream> {
  let b: CompletionsBehaviour = { text: " world, said the model.", fill: "return a + b;", chunks: 3, usage: { prompt_tokens: 5, completion_tokens: 7 }, status: 200, cutAfter: null, ignoreStream: false, ...initial };
  const requests: Array<Record<string, unknown>> = [];
  const server = await startJsonServer("/v1/completions", (body, res) => {
    requests.push(body);
    if (b.status !== 200) {
      res.writeHead(b.status, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `completion failed with ${b.status}` } }));
      return;
    }
    const texts = answers(body, b);
    const base = { id: "cmpl-upstream", object: "text_completion", created: 1_700_000_000, model: body.model };
    const usage = b.usage ? { ...b.usage, total_tokens: b.usage.prompt_tokens + b.usage.completion_tokens } : undefined;
    if (body.stream !== true || b.ignoreStream) {
      const choices = texts.map((text, index) => ({ index, text, logprobs: null, finish_reason: "stop" }));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ...base, choices, ...(usage ? { usage } : {}) }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    let sent = 0;
    const send = (chunk: unknown) => {
      if (b.cutAfter !== null && sent++ >= b.cutAfter) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    };
    for (let piece = 0; piece < b.chunks; piece++) {
      texts.forEach((text, index) => {
        const size = Math.ceil(text.length / b.chunks);
        send({ ...base, choices: [{ index, text: text.slice(piece * size, (piece + 1) * size), logprobs: null, finish_reason: null }] });
      });
    }
    if (b.cutAfter !== null) {
      // what was written reaches the client, then the connection breaks
      res.write("", () => res.destroy());
      return;
    }
    texts.forEach((_, index) => send({ ...base, choices: [{ index, text: "", logprobs: null, finish_reason: "stop" }] }));
    const wantsUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
    if (usage && wantsUsage) send({ ...base, choices: [], usage });
    res.end("data: [DONE]\n\n");
  });
  return { url: server.url, requests, behave: (change) => (b = { ...b, ...change }), close: server.close };
}

/** One text per choice: prompts × n, in order. */
function answers(body: Record<string, unknown>, b: CompletionsBehaviour): string[] {
  const prompt = body.prompt;
  const prompts = typeof prompt === "string" ? [prompt] : Array.isArray(prompt) && typeof prompt[0] === "number" ? [prompt] : (prompt as unknown[]);
  const n = typeof body.n === "number" ? body.n : 1;
  const out: string[] = [];
  for (const p of prompts) {
    const own = typeof body.suffix === "string" ? b.fill : b.text;
    for (let i = 0; i < n; i++) out.push(body.echo === true && typeof p === "string" ? p + own : own);
  }
  return out;
}
