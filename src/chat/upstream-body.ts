// The body a chat model gets (docs/api.md#chat): OpenAI's chat fields only, plus the vendor sampling
// fields the model lists in `passThrough`; never a field that sets the answer's length under another
// name than max_tokens, nor anything only FastGPT reads. Share-link users send FastGPT's share-link
// request: their messages (no system message of theirs) and stream, nothing more.
import type { ModelConfig } from "../config/schema.js";
import { badRequest } from "../http/errors.js";
import type { LimitedChat } from "./limits.js";
import type { ChatRequest } from "./request-schema.js";

/** OpenAI's chat completions fields a model may be sent, besides model, messages, max_tokens,
 *  temperature and stream_options (which the gateway sets). */
const OPENAI_FIELDS = [
  "stream",
  "n",
  "top_p",
  "stop",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "seed",
  "user",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "functions",
  "function_call",
  "response_format",
  "reasoning_effort",
  "modalities",
  "audio",
  "prediction",
  "verbosity",
] as const;

export function upstreamBody(req: ChatRequest, model: ModelConfig, limited: LimitedChat, forShare: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { model: model.model, messages: limited.messages, max_tokens: limited.maxTokens };
  if (forShare) {
    if (req.stream !== undefined) body.stream = req.stream;
  } else {
    for (const field of OPENAI_FIELDS) if (req[field] !== undefined) body[field] = req[field];
    for (const field of model.passThrough) if (req[field] !== undefined) body[field] = req[field];
  }
  if (limited.temperature !== undefined) body.temperature = limited.temperature;
  // usage is always asked for, so tokens are the model's own count; hidden later if the client did not ask
  if (req.stream) body.stream_options = { ...(forShare ? {} : (req.stream_options ?? {})), include_usage: true };
  return body;
}

/** A share-link user's request as FastGPT's share window sends it: no system message of theirs (the
 *  app's and the model's prompts are the operator's), no tools, one choice, no sampling fields. */
export function shareRequest(req: ChatRequest): ChatRequest {
  const { stream, chatId, detail, variables, shareId, outLinkUid, responseChatItemId } = req;
  const messages = req.messages.filter((m) => m.role === "user" || m.role === "assistant").map((m) => ({ role: m.role, content: m.content }));
  if (messages.length === 0) throw badRequest("invalid_request", "messages must hold a user message.", "messages");
  return { messages, stream, chatId, detail, variables, shareId, outLinkUid, responseChatItemId };
}
