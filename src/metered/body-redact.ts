// What a kept body must not hold (docs/fastgpt.md#bodies): the config's secrets and the caller's key,
// secret-named JSON members, `sk-` keys — all found in one pass of one expression, built once per
// config, so redaction costs about the same with thousands of keys as with a few; and the cut at
// `server.bodyLog.maxBytes`.

const REDACTED = "[redacted]";
/** JSON members whose values are secrets, whatever their case */
const SECRET_MEMBER = `("(?:api_key|apikey|authorization|password|secret|token|access_token|refresh_token|outlinkuid)"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`;
const SK_KEY = "sk-[A-Za-z0-9_-]{16,}";
/** shorter strings are too common to be told from text */
const MIN_SECRET = 6;

/** Redacts a body: its secrets, and `also` (the caller's key) where it is not among them. */
export type Redactor = (text: string, also?: string) => string;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const replace = (_match: string, member: string | undefined) => (member === undefined ? REDACTED : `${member}"${REDACTED}"`);

export function createRedactor(secrets: string[]): Redactor {
  const known = new Set(secrets.filter((s) => s.length >= MIN_SECRET));
  // the longest first, and before `sk-`, so that a secret holding another is redacted whole; in any
  // case, as the members are (one flag for the whole expression)
  const literals = [...known].sort((a, b) => b.length - a.length).map(escape);
  const pattern = new RegExp([SECRET_MEMBER, ...literals, SK_KEY].join("|"), "gi");
  return (text, also) => {
    const out = text.replace(pattern, replace);
    return also && also.length >= MIN_SECRET && !known.has(also) && out.includes(also) ? out.split(also).join(REDACTED) : out;
  };
}

/** At most `maxBytes` of UTF-8, cut at a character and ending `...`; whether it was cut. */
export function cut(text: string, maxBytes: number): [string, boolean] {
  // a UTF-16 unit is at most 3 bytes of UTF-8: most bodies are measured without being encoded
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return [text, false];
  const head = Buffer.from(text).subarray(0, maxBytes - 3).toString("utf8").replace(/\uFFFD+$/, "");
  return [`${head}...`, true];
}
