// The store interface: conversations, share-link records, usage rows, spend counters, created keys.
// SQLite (store/sqlite.ts, one process) and PostgreSQL (store/postgres.ts, shared by instances)
// implement it with the same behaviour: test/support/store-contract.ts holds them to it.

/** Who owns a chat: null for chats made through an app key, a share-link user otherwise. */
export interface ChatOwner {
  shareId: string;
  uid: string;
}

export interface ChatMessage {
  role: "user" | "assistant";
  content: string;
  /** epoch milliseconds */
  createdAt: number;
}

export interface ChatInfo {
  chatId: string;
  owner: ChatOwner | null;
  title: string;
  /** epoch milliseconds */
  updatedAt: number;
  /** the chat's FastGPT variables; absent when it never had any */
  variables?: Record<string, unknown>;
}

export interface ChatSummary {
  chatId: string;
  title: string;
  updatedAt: number;
}

export interface AppendRoundInput {
  appId: string;
  chatId: string;
  owner: ChatOwner | null;
  user: string;
  assistant: string;
  /** epoch milliseconds of the answer */
  at: number;
  /** when given, the chat's variables from now on (the caller merged them with the stored ones) */
  variables?: Record<string, unknown>;
}

export interface UsageRow {
  /** epoch milliseconds */
  time: number;
  appId: string;
  /** the API key's configured name, never the key; null for share-link users */
  keyName: string | null;
  shareId: string | null;
  model: string;
  channel: string;
  inputTokens: number;
  outputTokens: number;
  points: number;
  status: number;
  durationMs: number;
  chatId: string | null;
}

export interface UsageTotals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  points: number;
}

export interface UsageSummary {
  totals: UsageTotals;
  apps: Array<UsageTotals & { appId: string }>;
  models: Array<UsageTotals & { model: string }>;
}

export interface UsageQuery {
  /** epoch milliseconds, inclusive */
  from?: number;
  /** epoch milliseconds, exclusive */
  to?: number;
  appId?: string;
}

/** A key created through the operations API (CONTRACTS §12): never the key, only its digest. */
export interface CreatedKeyRow {
  name: string;
  kind: "app" | "global";
  appId: string | null;
  /** sha256 hex digest of the key */
  sha256: string;
  /** -1: no budget */
  maxUsagePoints: number;
  /** 0: no rate limit */
  qpm: number;
  /** epoch milliseconds */
  createdAt: number;
  revokedAt: number | null;
}

export interface KeyUse {
  name: string;
  /** epoch milliseconds */
  lastUsedAt: number;
}

/** A chat and its last messages, read at once. */
export interface ChatWithMessages {
  chat: ChatInfo;
  messages: ChatMessage[];
}

export interface Store {
  /** The chat's owner, title and variables, or undefined when (appId, chatId) has no chat yet. */
  getChat(appId: string, chatId: string): Promise<ChatInfo | undefined>;
  /** The last `limit` messages of the chat, oldest first ([] when none or limit is 0). */
  loadMessages(appId: string, chatId: string, limit: number): Promise<ChatMessage[]>;
  /** getChat and loadMessages at once (one statement on PostgreSQL); undefined when there is no chat. */
  getChatWithMessages(appId: string, chatId: string, limit: number): Promise<ChatWithMessages | undefined>;
  /** Stores the user turn and the assistant turn atomically; creates the chat (title from the first
   *  user turn) when it does not exist yet, moves its updatedAt and replaces its variables when
   *  given. Concurrent calls lose no turn. */
  appendRound(input: AppendRoundInput): Promise<void>;
  /** A share-link user's chats updated at or after `since`, newest first, at most `limit`. */
  listChats(owner: ChatOwner, opts: { since: number; limit: number }): Promise<ChatSummary[]>;
  /** Inserts one usage row and adds its points to every named spend scope, in one transaction. */
  recordUsage(row: UsageRow, spendScopes: string[]): Promise<void>;
  summarizeUsage(query: UsageQuery): Promise<UsageSummary>;
  /** Points spent so far by a scope (`app:<id>`, `key:<name>`, `share:<shareId>`). */
  getSpent(scope: string): Promise<number>;
  /** Every created key, revoked ones too, oldest first. */
  listCreatedKeys(): Promise<CreatedKeyRow[]>;
  /** Adds a created key; false (nothing written) when a created key already has the name. */
  createKey(row: CreatedKeyRow): Promise<boolean>;
  /** Marks a created key revoked at `at` (a second revoke keeps the first time); the row after,
   *  or undefined when no created key has the name. */
  revokeKey(name: string, at: number): Promise<CreatedKeyRow | undefined>;
  /** Moves keys' lastUsedAt forward (never back), in one transaction. */
  recordKeyUse(uses: KeyUse[]): Promise<void>;
  /** lastUsedAt of every key used so far (config and created keys). */
  listKeyUse(): Promise<KeyUse[]>;
  /** Resolves when the store answers; rejects otherwise (used by /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
