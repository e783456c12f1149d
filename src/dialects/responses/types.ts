// The pipeline's dialect types (src/chat/dialect.ts), and what an upstream's whole answer may hold
// beyond what the chat path types (docs/codex.md#how-sluice-serves-it).

export type { ChatChunk, DialectUsage, StreamTranslator } from "../../chat/dialect.js";

/** What an upstream's chat.completion message may hold beyond `content` (CompletionJson types only that). */
export interface ChatAnswerMessage {
  role?: string;
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: Array<{ id?: string; type?: string; function?: { name?: string; arguments?: string } }> | null;
}
