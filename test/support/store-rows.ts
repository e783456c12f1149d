// Rows and reads for store tests: a round, a usage row, a created key, a stored response with
// defaults, and a chat's history and details read through openChat, as production reads them.
import { expect } from "vitest";
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
    inputTokens: 10, outputTokens: 5, points: 1, status: 200, durationMs: 30, chatId: null, finishReason: "stop", cachedTokens: 0, ...over,
  };
}

export function createdKey(over: Partial<CreatedKeyRow> & { name: string }): CreatedKeyRow {
  return {
    kind: "app", appId: "support", sha256: `digest-of-${over.name}`, maxUsagePoints: -1, qpm: 0, tpm: 0, periodPoints: -1, period: "day", expiresAt: null, createdAt: T0, revokedAt: null, ...over,
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

/**
 * The records a previous build wrote (each store's upgrade test writes the same ones), read back
 * from the upgraded store: a chat made through an app key is any key's and no share user's, a
 * share user's chat stays hers, and usage, spend and keys are whole.
 */
export async function expectUpgradedRecords(upgraded: Store): Promise<void> {
  expect(await chatOf(upgraded, "support", "by-key")).toEqual({ chatId: "by-key", owner: null, title: "key question", updatedAt: T0 + 2, variables: { lang: "en" } });
  // owned by nobody in particular: any key of the app reads and writes it, a share-link user neither
  for (const keyName of ["web", "another"]) {
    const opened = await upgraded.openChat("support", "by-key", { keyName }, { limit: 100, maxBytes: Number.POSITIVE_INFINITY, create: false });
    expect(opened.status === "owned" && opened.messages.map((m) => m.content)).toEqual(["k0", "ka0", "k1", "ka1", "k2", "ka2"]);
  }
  expect(await upgraded.openChat("support", "by-key", alice, { limit: 100, maxBytes: 1000, create: false })).toEqual({ status: "not_owned" });
  expect(await upgraded.appendRound(round({ chatId: "by-key", owner: alice, user: "mine now?" }))).toBe(false);
  expect(await upgraded.appendRound(round({ chatId: "by-key", owner: web, user: "k3", at: T0 + 3 }))).toBe(true);
  expect((await chatOf(upgraded, "support", "by-key"))?.owner).toBeNull();
  expect(await chatOf(upgraded, "support", "by-alice")).toEqual({ chatId: "by-alice", owner: alice, title: "her question", updatedAt: T0 + 5 });
  expect(await upgraded.listChats(alice, { since: 0, limit: 20 })).toEqual([{ chatId: "by-alice", title: "her question", updatedAt: T0 + 5 }]);
  expect(await upgraded.summarizeUsage({ groupBy: "finishReason" })).toMatchObject({
    totals: { requests: 1, inputTokens: 10, outputTokens: 5, points: 1.5 },
    finishReasons: [{ finishReason: null, requests: 1, inputTokens: 10, outputTokens: 5, points: 1.5 }],
  });
  expect(await upgraded.getSpent("app:support")).toBe(1.5);
  expect(await upgraded.listCreatedKeys()).toEqual([createdKey({ name: "ops" })]);
  expect(await upgraded.listKeyUse()).toEqual([{ name: "web", lastUsedAt: T0 + 9 }]);
}
