// The chat completions request body: OpenAI's fields plus FastGPT's chatId/detail/variables and the
// share-link fields. Unknown OpenAI fields (top_p, stop, tools, …) pass through untouched.
import { z } from "zod";
import { RawText } from "../json/raw-text.js";
import { listOf, modelName, parseBody, stopStrings } from "../http/validation.js";

// What one request may hold (docs/api.md#request-bounds): OpenAI's own bounds where it has them
/** OpenAI's bound on `messages` */
const MAX_CHAT_MESSAGES = 2048;
const MAX_PARTS = 1000;
/** OpenAI's bound on `tools` */
const MAX_TOOLS = 128;
/** OpenAI's bound on `stop` */
const MAX_STOP = 4;

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const imagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.union([z.string(), z.looseObject({ url: z.string() })]),
});
const otherPart = z.looseObject({ type: z.enum(["input_audio", "file", "refusal"]) });
/** FastGPT's documented file part: chat upstreams cannot read it, so it becomes a text line. */
const fileUrlPart = z
  .looseObject({ type: z.literal("file_url"), name: z.string().optional(), url: z.string() })
  .transform((p) => ({ type: "text" as const, text: `[file: ${p.name ?? p.url}](${p.url})` }));
const contentPart = z.discriminatedUnion("type", [textPart, imagePart, otherPart, fileUrlPart]);

const messageSchema = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  // a long content of a large body may still be the client's bytes (src/json/raw-text.ts)
  content: z.union([z.string(), z.custom<RawText>((v) => v instanceof RawText), listOf(contentPart, MAX_PARTS), z.null()]),
});

export const chatRequestSchema = z.looseObject({
  model: modelName().optional(),
  messages: listOf(messageSchema, MAX_CHAT_MESSAGES, 1),
  // passed through as they are; bounded here
  tools: listOf(z.unknown(), MAX_TOOLS).nullish(),
  stop: stopStrings(MAX_STOP).nullish(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  temperature: z.number().nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  n: z.number().int().positive().nullish(),
  // FastGPT: "" or null means no stored chat
  chatId: z
    .string()
    .max(250)
    .nullish()
    .transform((id) => id || undefined),
  detail: z.boolean().optional(),
  variables: z.record(z.string(), z.unknown()).optional(),
  shareId: z.string().min(1).optional(),
  outLinkUid: z.string().min(1).optional(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;
export type ChatMessage = ChatRequest["messages"][number];

/** The validated request, or a 400 naming the first offending field and what it should be. */
export function parseChatRequest(body: unknown): ChatRequest {
  return parseBody(chatRequestSchema, body);
}
