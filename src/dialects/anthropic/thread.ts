// Anthropic message threads (docs/claude-code.md#message-threads): a request with `"thread": {"type":
// "create"}` has its conversation kept under its answer's message id; one with `{"type": "continue",
// "previous_message_id"}` is that conversation — its system prompt, tools and tool choice, its
// messages and the answer — followed by the request's new messages, and its answer continues the
// thread in turn. Threads are rows of the store's responses table, as Responses' `store` keeps them
// (docs/store.md#responses): read by every instance, owned by the key that made them, kept
// `dialects.threadTtlHours`, bounded by the same quotas. A thread is served or refused, never dropped.
import type { Config } from "../../config/schema.js";
import { badRequest } from "../../http/errors.js";
import type { Caller } from "../../metered/caller.js";
import type { Store, StoredResponse } from "../../store/types.js";
import { threadNotFound, threadUnsupported } from "./errors.js";
import type { AnthropicMessage, CountTokensRequest, MessagesRequest, ThreadParam } from "./request-schema.js";

export interface ThreadDeps {
  store: Store;
  /** the stored responses' bounds, which threads share: one row, one quota */
  limits: Config["responses"];
  ttlHours: number;
  clock: () => number;
}

/** A thread as stored: what a `continue` takes from it. */
interface ThreadInput {
  system?: MessagesRequest["system"];
  tools?: MessagesRequest["tools"];
  tool_choice?: MessagesRequest["tool_choice"];
  /** the conversation up to the answer */
  messages: AnthropicMessage[];
}

/** A thread opened for a request: what it holds so far, and whose it is. */
export interface OpenedThread {
  previousId: string | null;
  input: ThreadInput;
  owner: { appId: string; keyName: string };
  now: number;
}

/** What a threaded request's answer is kept with. */
export interface ThreadCtx {
  previousId: string | null;
  owner: { appId: string; keyName: string };
  /** JSON of its ThreadInput: made once, for the size checks and the row */
  input: string;
  now: number;
}

/** The part of an answer a thread keeps: a `continue` sends it to the model as the assistant's turn. */
export interface ThreadAnswer {
  id: string;
  content: unknown[];
}

const HOUR_MS = 3_600_000;
/** Anthropic's message ids, and so threads' rows; Responses' are `resp_…` (docs/store.md#responses) */
const MESSAGE_ID = "msg_";
/** blocks that change a thread's tools mid-conversation: Sluice would drop them (to-chat.ts) */
const TOOL_CHANGES = new Set(["tool_addition", "tool_removal"]);

/**
 * The request as served, and the thread its answer goes on (none: an unthreaded request). A
 * `continue` gets the stored conversation before its own messages, and the stored system prompt,
 * tools and tool choice (its own tool choice wins). Refusals: thread_not_found,
 * thread_unsupported_request, and a 400 for `system` or `tools` on a `continue`.
 */
export async function openThread<R extends CountTokensRequest>(
  deps: Pick<ThreadDeps, "store" | "clock">,
  req: R,
  caller: Caller,
): Promise<{ req: R; thread?: OpenedThread }> {
  const param = req.thread;
  if (param == null) return { req };
  refuseUnsupported(req, param);
  const owner = { appId: caller.app.id, keyName: caller.key?.name ?? "" };
  const now = deps.clock();
  if (param.type === "create") {
    const input = { system: req.system, tools: req.tools, tool_choice: req.tool_choice, messages: req.messages };
    return { req, thread: { previousId: null, input, owner, now } };
  }
  const id = param.previous_message_id!;
  const row = id.startsWith(MESSAGE_ID) ? await deps.store.getResponse(owner.appId, id, now, owner.keyName) : undefined;
  if (!row) throw threadNotFound(id);
  const stored = JSON.parse(row.input) as ThreadInput;
  const answer = JSON.parse(row.output) as ThreadAnswer;
  const messages = [...stored.messages, { role: "assistant", content: answer.content } as AnthropicMessage, ...req.messages];
  const input: ThreadInput = { system: stored.system, tools: stored.tools, tool_choice: req.tool_choice ?? stored.tool_choice, messages };
  return { req: { ...req, ...input } as R, thread: { previousId: id, input, owner, now } };
}

/** Before the model is called: a thread whose conversation could not be kept (over
 *  `responses.maxBytes`, or the app's stored rows at their quota) is refused as unsupported, so
 *  the SDK goes on without one rather than lose the thread after the answer. */
export async function keepable(deps: ThreadDeps, thread: OpenedThread): Promise<ThreadCtx> {
  const { limits } = deps;
  const input = JSON.stringify(thread.input);
  const bytes = Buffer.byteLength(input, "utf8");
  if (bytes > limits.maxBytes) throw threadUnsupported(["thread_size"], `the conversation (${bytes} bytes) is larger than a thread may keep (${limits.maxBytes})`);
  const kept = await deps.store.responseUsage(thread.owner.appId, thread.now);
  if (kept.rows >= limits.maxRowsPerApp || kept.bytes + bytes > limits.maxBytesPerApp) {
    throw threadUnsupported(["thread_quota"], "this app keeps as many stored conversations as it may");
  }
  return { previousId: thread.previousId, owner: thread.owner, input, now: thread.now };
}

/** The row that keeps the thread under its answer's id; none when the answer takes it past `responses.maxBytes`. */
export function threadRow(deps: Pick<ThreadDeps, "limits" | "ttlHours">, ctx: ThreadCtx, answer: ThreadAnswer): StoredResponse | undefined {
  const output = JSON.stringify({ id: answer.id, content: answer.content });
  if (Buffer.byteLength(ctx.input) + Buffer.byteLength(output) > deps.limits.maxBytes) return undefined;
  return {
    id: answer.id,
    appId: ctx.owner.appId,
    keyName: ctx.owner.keyName,
    createdAt: ctx.now,
    expiresAt: ctx.now + deps.ttlHours * HOUR_MS,
    previousId: ctx.previousId,
    input: ctx.input,
    output,
  };
}

function refuseUnsupported(req: CountTokensRequest, param: ThreadParam): void {
  if (param.type !== "create" && param.type !== "continue") throw threadUnsupported(["thread.type"], `type ${JSON.stringify(param.type)} is not one Sluice serves`);
  const changes = new Set<string>();
  for (const m of req.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) if (b.type === "other" && TOOL_CHANGES.has(b.was)) changes.add(b.was);
  }
  if (changes.size > 0) throw threadUnsupported([...changes], `${[...changes].join(" and ")} blocks are not supported`);
  if (param.type === "create") return;
  if (param.previous_message_id === undefined) throw badRequest("invalid_request", "thread.previous_message_id: is required to continue a thread", "thread.previous_message_id");
  for (const field of ["system", "tools"] as const) {
    if (req[field] !== undefined) throw badRequest("invalid_request", `${field}: a thread keeps the ${field} it was created with; a continue sends none`, field);
  }
}
