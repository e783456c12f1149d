// A request's affinity key (docs/routing.md#affinity-key): the first signal present — the kind's own
// session field (Responses and chat `prompt_cache_key`, Anthropic `metadata.user_id`), the
// `x-session-id` header, a FastGPT chat (scoped by app, or by share link and user), the OpenAI
// `user` / `safety_identifier`, else a fingerprint of the model and the prompt's start (system
// prompt + first user turn, its first 64 KiB) — as a digest: the key is never kept, logged or sent
// in clear, and each kind of signal hashes apart from the others.
import { createHash } from "node:crypto";
import { RawText } from "../json/raw-text.js";
import type { Caller } from "./caller.js";

/** 64 KiB of the prompt's start, counted in UTF-16 units (docs/routing.md#affinity-key) */
const FINGERPRINT_CHARS = 64 * 1024;
const SESSION_HEADER = "x-session-id";

/** What a kind names of its request (its spec's `affinity`); every field optional. */
export interface AffinitySignals {
  /** the kind's own session field */
  session?: unknown;
  /** a FastGPT chatId (the pipeline scopes it by app, or by share link and user) */
  chatId?: string;
  /** a share-link user's uid, for the scope of their chat */
  shareUid?: string;
  /** the OpenAI `user` / `safety_identifier` */
  user?: unknown;
  /** the prompt in order: the fingerprint reads its system messages and first user turn */
  prompt?: ReadonlyArray<{ role: string; content?: unknown }> | string;
  /** the tools the channel is sent, part of the prefix (docs/routing.md#prefix) */
  tools?: unknown;
}

const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

export function affinityKey(signals: AffinitySignals, caller: Caller, model: string, headers: Headers): string {
  const session = text(signals.session) ?? text(headers.get(SESSION_HEADER));
  if (session !== undefined) return digest("session", session);
  if (signals.chatId) {
    const scope = caller.share ? `share:${caller.share.link.shareId}:${signals.shareUid ?? ""}` : `app:${caller.app.id}`;
    return digest("chat", `${scope}\0${signals.chatId}`);
  }
  const user = text(signals.user);
  if (user !== undefined) return digest("user", user);
  return digest("prompt", `${model}\0${promptStart(signals.prompt)}`);
}

function digest(kind: string, value: string): string {
  return createHash("sha256").update(kind).update("\0").update(value).digest("base64url");
}

/** The system messages and the first user turn, cut to FINGERPRINT_CHARS characters: the turns of
 *  one agent session share it, sessions with different tasks do not. */
function promptStart(prompt: AffinitySignals["prompt"]): string {
  if (typeof prompt === "string" || prompt === undefined) return (prompt ?? "").slice(0, FINGERPRINT_CHARS);
  let start = "";
  for (const m of prompt) {
    if (m.role === "system" || m.role === "developer" || m.role === "user") start += `${m.role}\0${contentText(m.content)}\0`;
    if (m.role === "user" || start.length >= FINGERPRINT_CHARS) break;
  }
  return start.slice(0, FINGERPRINT_CHARS);
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content.slice(0, FINGERPRINT_CHARS);
  // decoded: the same text is a string in a small body and raw bytes in a large one
  if (content instanceof RawText) return content.text().slice(0, FINGERPRINT_CHARS);
  if (!Array.isArray(content)) return "";
  let out = "";
  for (const part of content) {
    const t = (part as { text?: unknown } | null)?.text;
    out += typeof t === "string" ? t : JSON.stringify(part ?? null).slice(0, 256);
    if (out.length >= FINGERPRINT_CHARS) break;
  }
  return out;
}
