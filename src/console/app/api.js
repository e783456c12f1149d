// Calls to the gateway's own APIs (docs/console.md#what-it-calls). The admin key lives in this tab's
// sessionStorage only — never a URL, a cookie or localStorage — and goes out as a Bearer header.
// A 401 on any call (a key revoked, expired or taken out of config.json) signs the tab out.
const KEY_ITEM = "sluice.console.adminKey";

let signedOut = () => {};

export const session = {
  key: () => sessionStorage.getItem(KEY_ITEM),
  signIn: (key) => sessionStorage.setItem(KEY_ITEM, key),
  signOut(reason) {
    sessionStorage.removeItem(KEY_ITEM);
    signedOut(reason);
  },
  /** What the app does on a sign-out: back to the sign-in form, saying why. */
  onSignOut(fn) {
    signedOut = fn;
  },
};

export class ApiError extends Error {
  constructor(status, message, data) {
    super(message);
    this.status = status;
    this.data = data;
  }
}

const REVOKED = "The gateway no longer accepts this admin key (revoked, expired or removed from config.json). Sign in again.";

/** The message an answer carries: OpenAI's shape `{error: {message}}` or aiproxy's `{message}`. */
function messageOf(body, status) {
  if (body && typeof body === "object") {
    if (body.error && typeof body.error.message === "string") return body.error.message;
    if (typeof body.message === "string" && body.message) return body.message;
  }
  return `The gateway answered HTTP ${status}.`;
}

async function send(path, { method = "GET", body, key }) {
  const headers = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  try {
    return await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store", credentials: "omit" });
  } catch {
    throw new ApiError(0, "The gateway could not be reached. Is it running?");
  }
}

/**
 * One call with the tab's key: the parsed JSON (or the text, `text: true`). An error answer throws
 * an ApiError with the API's own message; aiproxy's `success: false` too, unless `envelope: true`
 * (a channel test that failed carries its result in `data`).
 */
export async function api(path, { method, body, text = false, envelope = false } = {}) {
  const key = session.key();
  if (!key) {
    session.signOut("Sign in to continue.");
    throw new ApiError(401, "Not signed in.");
  }
  const res = await send(path, { method, body, key });
  if (res.status === 401) {
    session.signOut(REVOKED);
    throw new ApiError(401, REVOKED);
  }
  const raw = await res.text();
  let json;
  try {
    json = raw ? JSON.parse(raw) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) throw new ApiError(res.status, messageOf(json, res.status), json);
  if (text) return raw;
  if (json && json.success === false && !envelope) throw new ApiError(res.status, messageOf(json, res.status), json);
  return json;
}

/** aiproxy's answers: the `data` of `{success: true, data}`. */
export const aiproxy = async (path, options) => (await api(path, options))?.data;

/** Checks a key before keeping it: it must be known (401) and an admin key (403). */
export async function checkKey(key) {
  const res = await send("/api/admin/keys", { key });
  if (res.ok) return;
  const json = await res.json().catch(() => undefined);
  if (res.status === 401) throw new ApiError(401, `Wrong key: ${messageOf(json, 401)}`);
  if (res.status === 403) throw new ApiError(403, "That key is valid but is not an admin key: the console needs a key of kind \"admin\" from config.json.");
  throw new ApiError(res.status, messageOf(json, res.status));
}

/** A query string of the values that are set. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}
