// The bodies FastGPT's log detail shows (docs/fastgpt.md#bodies), for the apps that keep them
// (`apps[].logBodies`): the request as received and the answer as sent — its bytes teed from the
// response as they are written, whole or streamed, errors too — redacted, cut to
// `server.bodyLog.maxBytes`, and stored once the answer is over, off the request's path. They go
// to the store only: never to the request log, metrics or the usage API.
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import type { RequestFacts } from "../http/facts.js";
import { nodeResponse } from "../http/node.js";
import type { Store } from "../store/types.js";

export interface BodyLogDeps {
  store: Pick<Store, "saveBodies">;
  /** every configured secret: client keys given in plain, channel keys, the metrics token */
  secrets: string[];
  maxBytes: number;
  retentionMs: number;
}

const REDACTED = "[redacted]";
/** JSON members whose values are secrets, whatever their case */
const SECRET_MEMBER = /("(?:api_key|apikey|authorization|password|secret|token|access_token|refresh_token|outlinkuid)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi;
const SK_KEY = /sk-[A-Za-z0-9_-]{16,}/g;
const TEXT_TYPE = /json|text|event-stream/i;

/** Starts teeing the answer of a request whose app keeps bodies (`mode` errors or all). */
export function captureBodies(event: H3Event, deps: BodyLogDeps, mode: "errors" | "all", request: string, facts: RequestFacts, time: number): void {
  const res = nodeResponse(event);
  if (!res) return;
  const bearer = /^Bearer\s+(\S+)/i.exec(event.req.headers.get("authorization") ?? "")?.[1];
  const secrets = bearer ? [...deps.secrets, bearer] : deps.secrets;
  // what redaction may shorten is read beyond the cut, up to a bound
  const answer = tee(res, deps.maxBytes * 4);
  res.once("close", () => {
    // only a request that reached a model server has a usage row to show the bodies with
    if (!facts.channel || !facts.requestId || (mode === "errors" && res.statusCode === 200)) return;
    const type = String(res.getHeader("content-type") ?? "");
    const response = TEXT_TYPE.test(type) ? answer.text() : `<${answer.bytes} bytes ${type || "unknown"}>`;
    const [req, reqCut] = cut(redact(request, secrets), deps.maxBytes);
    const [resp, respCut] = cut(redact(response, secrets), deps.maxBytes);
    const saved = { requestId: facts.requestId, time, request: req, response: resp, requestTruncated: reqCut, responseTruncated: respCut || answer.over, expiresAt: time + deps.retentionMs };
    // a body that could not be kept costs the request nothing
    void deps.store.saveBodies(saved).catch(() => {});
  });
}

/** Keeps the first `limit` bytes written to the response. */
function tee(res: ServerResponse, limit: number) {
  const chunks: Buffer[] = [];
  let kept = 0;
  let bytes = 0;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === "function") return;
    const buf = Buffer.isBuffer(chunk) ? chunk : typeof chunk === "string" ? Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8") : Buffer.from(chunk as Uint8Array);
    bytes += buf.length;
    if (kept >= limit) return;
    const part = buf.length > limit - kept ? buf.subarray(0, limit - kept) : buf;
    chunks.push(part);
    kept += part.length;
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((...args: unknown[]) => (keep(args[0], args[1]), write(...args))) as ServerResponse["write"];
  res.end = ((...args: unknown[]) => (keep(args[0], args[1]), end(...args))) as ServerResponse["end"];
  return {
    text: () => Buffer.concat(chunks).toString("utf8"),
    get bytes() {
      return bytes;
    },
    get over() {
      return bytes > kept;
    },
  };
}

/** Secrets out: configured ones and the caller's key, secret-named JSON members, `sk-` keys. */
export function redact(text: string, secrets: string[]): string {
  let out = text.replace(SECRET_MEMBER, `$1"${REDACTED}"`).replace(SK_KEY, REDACTED);
  for (const secret of secrets) if (secret.length >= 6 && out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/** At most `maxBytes` of UTF-8, cut at a character and ending `...`; whether it was cut. */
export function cut(text: string, maxBytes: number): [string, boolean] {
  if (Buffer.byteLength(text) <= maxBytes) return [text, false];
  const head = Buffer.from(text).subarray(0, maxBytes - 3).toString("utf8").replace(/\uFFFD+$/, "");
  return [`${head}...`, true];
}
