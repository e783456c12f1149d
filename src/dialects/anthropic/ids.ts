// Anthropic ids for what the upstream answers (docs/claude-code.md#tool-calls). A tool call keeps the
// upstream's id inside its `toolu_` id, so the conversation the client sends back reaches the model
// with the ids the model produced (some chat templates render them). The mapping is one-to-one:
// ids outside [A-Za-z0-9_-], or that could be read as encoded, are carried base64url-encoded.
import { randomBytes } from "node:crypto";

const TOOL_PREFIX = "toolu_";
const ENCODED = "enc_";
const PLAIN_ID = /^[A-Za-z0-9_-]+$/;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `msg_` + 24 random base62 characters, as Anthropic's ids look. */
export function messageId(): string {
  return `msg_${randomBase62(24)}`;
}

/** The client-facing id of an upstream tool call id (a new random one when the upstream gave none). */
export function toolUseId(upstreamId: string | undefined): string {
  if (!upstreamId) return `${TOOL_PREFIX}${randomBase62(24)}`;
  if (PLAIN_ID.test(upstreamId) && !upstreamId.startsWith(ENCODED)) return TOOL_PREFIX + upstreamId;
  return TOOL_PREFIX + ENCODED + Buffer.from(upstreamId, "utf8").toString("base64url");
}

/** The chat id of a client's tool_use / tool_result id: the inverse of toolUseId; an id Sluice did
 *  not make (no `toolu_` prefix, or a conversation begun elsewhere) reaches the model as it is. */
export function chatToolCallId(clientId: string): string {
  if (!clientId.startsWith(TOOL_PREFIX)) return clientId;
  const rest = clientId.slice(TOOL_PREFIX.length);
  if (!rest.startsWith(ENCODED)) return rest;
  const encoded = rest.slice(ENCODED.length);
  const decoded = Buffer.from(encoded, "base64url").toString("utf8");
  return Buffer.from(decoded, "utf8").toString("base64url") === encoded ? decoded : rest;
}

function randomBase62(length: number): string {
  const bytes = randomBytes(length);
  let id = "";
  // 62 does not divide 256: the first 248 byte values map evenly, the rest are folded in (a bias
  // of no consequence for an id that only needs to be unique)
  for (const b of bytes) id += BASE62[b % 62];
  return id;
}
