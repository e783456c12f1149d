// A usage row (docs/api.md#usage): what one metered request cost, as the store keeps it. In a file
// of its own so the batch store's types (batch-types.ts) use it without importing the whole interface.

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
  /** why the answer ended (`stop`, `length`, `client_abort`, …); null when there was none */
  finishReason: string | null;
  /** of `inputTokens`: those the upstream served from its prefix cache (0 when it reports none) */
  cachedTokens: number;
  // what FastGPT's call logs show (docs/fastgpt.md#call-logs); absent on rows written before them
  /** the answer's x-request-id */
  requestId?: string | null;
  /** the path called, no query */
  endpoint?: string | null;
  /** the channel's number (channels[].id or the store's) */
  channelId?: number | null;
  /** channels tried */
  attempts?: number | null;
  /** ms from arrival to the answer's first byte */
  ttfbMs?: number | null;
  /** the client's error, `code: message`, at most 1 KB; null on success */
  error?: string | null;
  /** the end user: a share link's uid (a localId only as its digest,
   *  docs/store.md#share-link-users-in-usage-rows), else the request's `user` / `safety_identifier` /
   *  `metadata.user_id` (docs/api.md#usage); null when none was named */
  user?: string | null;
  /** the key of the row's kept bodies: an id Sluice made, unlike the client's request id
   *  (docs/fastgpt.md#bodies); null when its app keeps none, or on rows written before */
  bodiesKey?: string | null;
  /** the batch and line a batch line's row belongs to (docs/batches.md); null otherwise */
  batchId?: string | null;
  customId?: string | null;
}
