// Rows and reads for store tests: a round, a usage row, a created key, a stored response with
// defaults, and a chat's history and details read through openChat, as production reads them.
import type { AppendRoundInput, ChatInfo, ChatMessage, CreatedKeyRow, Store, StoredResponse, UsageRow } from "../../src/store/types.js";

export const DAY = 24 * 60 * 60 * 1000;
export const T0 = Date.UTC(2025, 0, 1);
export const alice = { shareId: "public", uid: "alice" };
export const web = { keyName: "web" };

export function round(over: Partial<AppendRoundInput> & { user: string }): AppendRoundInput {
  return { appId: "support", chatId: "c1", owner: web, assistant: `re: ${over.user}`, at: T0, ...over };
}

export function usage(over: Partial<UsageRow>): UsageRow {
  return {
    time: T0, appId: "support", keyName: "web", shareId: null, model: "glm", channel: "local",
    inputTokens: 10, outputTokens: 5, points: 1, status: 200, durationMs: 30, chatId: null, finishReason: "stop", ...over,
  };
}

export function createdKey(over: Partial<CreatedKeyRow> & { name: string }): CreatedKeyRow {
  return {
    kind: "app", appId: "support", sha256: `digest-of-${over.name}`, maxUsagePoints: -1, qpm: 0, createdAt: T0, revokedAt: null, ...over,
  };
}

export function response(over: Partial<StoredResponse> & { id: string }): StoredResponse {
  return {
    appId: "support", keyName: "web", createdAt: T0, expiresAt: T0 + 30 * DAY, previousId: null,
    input: `[{"role":"user","content":"hi ${over.id}"}]`, output: `{"id":"${over.id}","object":"response"}`, ...over,
  };
}

/** The chat's newest `limit` messages, read as an app that shares its chats reads them ([] when there
 *  is no chat). */
export async function history(store: Store, appId: string, chatId: string, limit = 1000): Promise<ChatMessage[]> {
  const opened = await store.openChat(appId, chatId, null, { limit, maxBytes: Number.POSITIVE_INFINITY, create: false });
  return opened.status === "owned" ? opened.messages : [];
}

/** The chat's owner, title, updatedAt and variables, or undefined when there is none. */
export async function chatOf(store: Store, appId: string, chatId: string): Promise<ChatInfo | undefined> {
  const opened = await store.openChat(appId, chatId, null, { limit: 0, maxBytes: Number.POSITIVE_INFINITY, create: false });
  return opened.status === "owned" ? opened.chat : undefined;
}

export const contents = (messages: Array<{ role: string; content: string }>) => messages.map((m) => `${m.role}:${m.content}`);
