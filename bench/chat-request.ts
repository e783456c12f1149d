// The requests the benchmark sends, and a check that a target really answers one (a fast 401 must
// not pass for throughput).
import { request } from "undici";
import { MODELS } from "./models.js";
import { BENCH_KEY } from "./sluice-process.js";

export const CHAT_PATH = "/v1/chat/completions";
export const EMBEDDINGS_PATH = "/v1/embeddings";
export const MESSAGES_PATH = "/v1/messages";
export const RESPONSES_PATH = "/v1/responses";
export const headersFor = (key: string) => ({ "content-type": "application/json", authorization: `Bearer ${key}` });
export const CHAT_HEADERS = headersFor(BENCH_KEY);

export interface ChatOptions {
  model?: string;
  chatId?: string;
  /** OpenAI's `user` field: passed upstream, so the failing upstream can name the request it failed */
  user?: string;
  /** the user message; a short greeting when not given */
  content?: string;
}

export function chatBody(stream: boolean, opts: ChatOptions = {}): string {
  const messages = [{ role: "user", content: opts.content ?? "Hello, how are you today?" }];
  const { model = MODELS.chat, chatId, user } = opts;
  return JSON.stringify({ model, messages, stream, ...(chatId === undefined ? {} : { chatId }), ...(user === undefined ? {} : { user }) });
}

const VOCABULARY = (
  "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were " +
  "her she there been one all would their we him can has more when will no if out so said what up its about into than them " +
  "only other new some could time these two may then do first any my now such like our over man me even most made after also"
).split(" ");

/** English-like text of `bytes` bytes (ASCII), the same every run: tokenizes like prose does. */
export function prose(bytes: number, seed = 1): string {
  let state = seed;
  let text = "";
  while (text.length < bytes) {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    text += (text ? " " : "") + VOCABULARY[state % VOCABULARY.length];
  }
  return text.slice(0, bytes);
}

/** The stream body of the Anthropic Messages dialect asking what chatBody(true) asks. */
export function messagesBody(): string {
  return JSON.stringify({ model: MODELS.chat, max_tokens: 1000, stream: true, messages: [{ role: "user", content: "Hello, how are you today?" }] });
}

/** The stream body of the Responses dialect asking what chatBody(true) asks (nothing stored). */
export function responsesBody(): string {
  return JSON.stringify({ model: MODELS.chat, input: "Hello, how are you today?", stream: true, store: false, max_output_tokens: 1000 });
}

/** Issue "FastGPT fidelity": 16 inputs of about 200 tokens (~155 words, ~800 bytes) each. */
export function embeddingsBody(model: string = MODELS.embed): string {
  const input = Array.from({ length: 16 }, (_, i) => prose(800, i + 1));
  return JSON.stringify({ model, input });
}

/** Throws, quoting the answer, unless the target answers 200 with a complete body. */
export async function expectAnswer(origin: string, path: string, headers: Record<string, string>, body: string): Promise<void> {
  const res = await request(origin + path, { method: "POST", headers, body });
  const text = await res.body.text();
  const complete =
    path === EMBEDDINGS_PATH
      ? text.includes('"embedding"')
      : path === MESSAGES_PATH
        ? text.includes("event: message_stop")
        : path === RESPONSES_PATH
          ? text.includes("response.completed")
          : JSON.parse(body).stream
            ? text.includes("data: [DONE]")
            : text.includes('"chat.completion"');
  if (res.statusCode !== 200 || !complete) {
    throw new Error(`POST ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  }
}
