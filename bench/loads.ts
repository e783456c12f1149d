// One request kind's load, by name: what `--profile` puts Sluice under and what bench/compare.ts
// runs on two builds.
import { CONNECTIONS, type LoadSpec } from "./autocannon-case.js";
import { CHAT_HEADERS, CHAT_PATH, EMBEDDINGS_PATH, headersFor, MESSAGES_PATH, RESPONSES_PATH, chatBody, embeddingsBody, messagesBody, responsesBody } from "./chat-request.js";
import { bodyCases } from "./per-kb.js";
import { BODIES_KEY } from "./sluice-process.js";

/** chatIds the chatId case spreads its connections over */
export const CHAT_IDS = 32;

export const spec = (origin: string, body: string | ((i: number) => string), opts: Partial<Omit<LoadSpec, "origin" | "body">> = {}): LoadSpec => ({
  origin,
  path: opts.path ?? CHAT_PATH,
  headers: opts.headers ?? CHAT_HEADERS,
  body: typeof body === "string" ? () => body : body,
  connections: opts.connections ?? CONNECTIONS,
});

export const chatIdBody = (i: number) => chatBody(false, { chatId: `bench-chat-${i % CHAT_IDS}` });

export const LOADS: Record<string, (origin: string) => LoadSpec> = {
  "non-stream": (origin) => spec(origin, chatBody(false)),
  chatId: (origin) => spec(origin, chatIdBody),
  // the non-stream load as an app that keeps every call's bodies (logBodies "all")
  bodies: (origin) => spec(origin, chatBody(false), { headers: headersFor(BODIES_KEY) }),
  stream: (origin) => spec(origin, chatBody(true)),
  "200kb": (origin) => spec(origin, bodyCases().find((b) => b.name === "200 KB body")!.body),
  embeddings: (origin) => spec(origin, embeddingsBody(), { path: EMBEDDINGS_PATH }),
  messages: (origin) => spec(origin, messagesBody(), { path: MESSAGES_PATH }),
  responses: (origin) => spec(origin, responsesBody(), { path: RESPONSES_PATH }),
};
