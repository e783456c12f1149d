// The one chat request every benchmark case sends, and a check that a target really answers it
// (a fast 401 must not pass for throughput).
import { request } from "undici";
import { BENCH_KEY, BENCH_MODEL } from "./sluice-process.js";

export const CHAT_PATH = "/v1/chat/completions";
export const CHAT_HEADERS = { "content-type": "application/json", authorization: `Bearer ${BENCH_KEY}` };

export function chatBody(stream: boolean, chatId?: string): string {
  const messages = [{ role: "user", content: "Hello, how are you today?" }];
  return JSON.stringify({ model: BENCH_MODEL, messages, stream, ...(chatId === undefined ? {} : { chatId }) });
}

/** Throws, quoting the answer, unless the target answers 200 with a complete body. */
export async function expectAnswer(origin: string, body: string): Promise<void> {
  const res = await request(origin + CHAT_PATH, { method: "POST", headers: CHAT_HEADERS, body });
  const text = await res.body.text();
  const complete = JSON.parse(body).stream ? text.includes("data: [DONE]") : text.includes('"chat.completion"');
  if (res.statusCode !== 200 || !complete) {
    throw new Error(`POST ${CHAT_PATH} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  }
}
