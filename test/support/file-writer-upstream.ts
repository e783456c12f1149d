// A model server that keeps a tool conversation to the rules vLLM and OpenAI keep: a chat whose
// `tool` message answers no tool call of the assistant message before it is refused with 400, as
// they refuse it. The model it plays is a coding agent asked to write some files: offered the
// `write_file` tool, it calls it once a turn, for each file it has not written yet (counted by the
// tool results in the conversation), then says it is done. Offered no tool, it can only answer in
// words, and does: the loop a lenient server would end after one tool.
import { textChunks, toolCallChunks, type ModelScript, type ModelTurn, type ScriptedRequest } from "./scripted-upstream.js";

export const WRITE_FILE = "write_file";

type Message = { role: string; content?: unknown; tool_call_id?: unknown; tool_calls?: Array<{ id?: string }> };

/** The refusal vLLM and OpenAI give a `tool` message with no tool call before it, or undefined. */
export function orphanToolMessage(messages: Message[]): string | undefined {
  let answered = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role === "assistant") answered = new Set((m.tool_calls ?? []).map((c) => String(c.id)));
    else if (m.role === "tool") {
      if (!answered.has(String(m.tool_call_id))) return `messages[${i}]: a 'tool' message must answer a tool call of the assistant message before it`;
    } else answered = new Set();
  }
  return undefined;
}

/** The script of a model writing `files` (path → content), one write_file call a turn. */
export function fileWriterScript(files: Array<{ path: string; content: string }>, usage = { prompt_tokens: 50, completion_tokens: 10 }): ModelScript {
  return (req: ScriptedRequest): ModelTurn => {
    const messages = req.body.messages as Message[];
    const orphan = orphanToolMessage(messages);
    if (orphan) return { chunks: [], finishReason: "stop", status: 400, message: orphan };
    const offered = ((req.body.tools ?? []) as Array<{ function?: { name?: string } }>).some((t) => t.function?.name === WRITE_FILE);
    const written = messages.filter((m) => m.role === "tool").length;
    if (!offered || written >= files.length) {
      return { chunks: textChunks(offered ? `Wrote ${written} files.` : "I have no tool to write files with."), finishReason: "stop", usage };
    }
    const file = files[written]!;
    return { chunks: [...textChunks(`Writing ${file.path}.`), ...toolCallChunks(0, `call_w${written}`, WRITE_FILE, file)], finishReason: "tool_calls", usage };
  };
}
