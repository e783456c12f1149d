// What `store: true` keeps (docs/codex.md#store-and-previous_response_id): the conversation so far
// as input items (the previous response's conversation, then this request's input) and the Response
// object itself. A follow-up's `previous_response_id` continues from both, so a chain of any length
// is read in one look-up; the previous instructions are not carried over (the API's rule).
import type { AppConfig } from "../../config/schema.js";
import type { StoredResponse } from "../../store/types.js";
import type { InputItem } from "./request-schema.js";
import type { OutputItem, ResponseObject } from "./response-object.js";
import type { ResponsesCtx } from "./to-chat.js";

/** The store's row of a response. */
export type StoredResponseRow = StoredResponse;

const DAY_MS = 86_400_000;

/** Whose stored responses a key reads, continues and deletes: its app's, and of them only its own
 *  unless the app shares its chats (`sharedChats`, docs/codex.md#store-and-previous_response_id). */
export function storedScope(app: AppConfig, keyName: string | undefined): { appId: string; keyName?: string } {
  return app.sharedChats ? { appId: app.id } : { appId: app.id, keyName: keyName ?? "" };
}

/** Whether `id` can name a stored response: the same rows hold Anthropic message threads, under
 *  their `msg_…` ids (docs/store.md#responses), which are no response of this API. */
export const isResponseId = (id: string): boolean => id.startsWith("resp_");

/** The row to save for `response`, or undefined when the request said `store: false`. */
export function storedRow(
  ctx: ResponsesCtx,
  response: ResponseObject,
  owner: { appId: string; keyName: string | null },
  opts: { now: number; retentionDays: number },
): StoredResponseRow | undefined {
  if (!ctx.store) return undefined;
  return {
    id: ctx.id,
    appId: owner.appId,
    keyName: owner.keyName,
    createdAt: opts.now,
    expiresAt: opts.now + opts.retentionDays * DAY_MS,
    previousId: ctx.previousId,
    input: JSON.stringify(ctx.conversation),
    output: JSON.stringify(response),
  };
}

/** The conversation a follow-up continues: the stored input items, then the answer's items as input. */
export function conversationOf(row: StoredResponseRow): InputItem[] {
  const input = JSON.parse(row.input) as InputItem[];
  const response = JSON.parse(row.output) as ResponseObject;
  return [...input, ...response.output.flatMap(outputAsInput)];
}

/** What `GET /v1/responses/{id}` answers. */
export function storedResponse(row: StoredResponseRow): ResponseObject {
  return JSON.parse(row.output) as ResponseObject;
}

/** What `DELETE /v1/responses/{id}` answers. */
export function deletedResponse(id: string): { id: string; object: "response.deleted"; deleted: true } {
  return { id, object: "response.deleted", deleted: true };
}

function outputAsInput(item: OutputItem): InputItem[] {
  switch (item.type) {
    case "message":
      return [{ type: "message", role: "assistant", content: item.content.map((p) => ({ type: "output_text" as const, text: p.text })) }];
    case "function_call": {
      const call: InputItem = { type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments };
      return item.namespace ? [{ ...call, namespace: item.namespace }] : [call];
    }
    case "custom_tool_call": {
      const call: InputItem = { type: "custom_tool_call", call_id: item.call_id, name: item.name, input: item.input };
      return item.namespace ? [{ ...call, namespace: item.namespace }] : [call];
    }
    case "reasoning":
      // never sent upstream again
      return [];
  }
}
