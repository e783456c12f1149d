// The operator's identity callbacks for share links (docs/api.md#identity-callbacks): `init` and
// `start` ask the operator's server whether a user may go on and who they are; `finish` reports
// each answer in the background, bounded and retried. Errors never carry the token or the host.
import { hash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { createFetch } from "ofetch";
import type { ShareLinkConfig } from "../config/schema.js";
import { SHARE_UID_KEEP_MS } from "../store/rows.js";
import type { Store } from "../store/types.js";
import { GatewayError } from "../http/errors.js";
import type { Observer, ShareCallbackKind } from "../observability/observer.js";
import { createWorkQueue } from "./finish-queue.js";
import { isValidUid, validateUid } from "./links.js";
import { callbackSpan } from "./callback-span.js";
import type { RequestTrace } from "../tracing/request-trace.js";

export interface ShareAuth {
  /** The user's uid for a share-link initialisation (cached briefly per link and token; a failure
   *  is remembered more briefly, and one token asked about many times at once is one call). */
  init(link: ShareLinkConfig, token: string, trace?: RequestTrace): Promise<string>;
  /** Asks the operator before each chat; the uid to store the chat under. */
  start(link: ShareLinkConfig, token: string, question: string, trace?: RequestTrace): Promise<string>;
  /** Reports a finished answer in the background; never throws, never delays. (`trace`: the
   *  request's, whose span each callback is: docs/tracing.md#spans) */
  finish(link: ShareLinkConfig, token: string, appName: string, responseData: unknown[], trace?: RequestTrace): void;
  /** Resolves when every queued finish report has been sent or given up. */
  drain(): Promise<void>;
  /** Refuses new reports, drops queued ones, aborts calls in flight; resolves when all settled. */
  close(): Promise<void>;
}

export interface ShareAuthOptions {
  observer: Observer;
  /** retries of a failed finish report after the first attempt (default 3) */
  finishRetries?: number;
  /** finish reports held at once, waiting or being sent (default 1000) */
  finishQueueMax?: number;
  /** first retry delay; each later retry waits twice as long (default 500 ms) */
  finishBackoffMs?: number;
  /** how long a successful init is remembered (default 60 s) */
  initCacheTtlMs?: number;
  /** how long a failed init (refused, unanswered, a bad uid) is remembered (default 10 s) */
  failedInitTtlMs?: number;
  /** the clock of those memories (default performance.now) */
  now?: () => number;
  fetch?: typeof globalThis.fetch;
  /** where init's uids are kept for every instance (under a digest of the token); absent: this process only */
  uids?: Pick<Store, "rememberShareUid" | "findShareUid">;
}


/** A token as it may be kept or used as a uid: its digest, never the token itself (docs/api.md#share-links). */
export function tokenDigest(token: string): string {
  return hash("sha256", token, "base64url");
}

interface FinishJob {
  link: ShareLinkConfig;
  trace?: RequestTrace;
  body: { token: string; appName: string; responseData: unknown[] };
}

/** What a failed init answered, to answer a repeat with (no stack, no token). */
interface FailedInit {
  status: number;
  code: string;
  message: string;
}

interface VerifyData {
  uid?: unknown;
}

type Verdict = { kind: "passed"; data: VerifyData } | { kind: "rejected"; message: string } | { kind: "broken" };

const FINISH_CONCURRENCY = 8;
const INIT_CACHE_MAX = 5000;
const FAILED_INIT_TTL_MS = 10_000;
const INIT_UID_TTL_MS = 24 * 60 * 60 * 1000;
const MAX_MESSAGE_CHARS = 500;
const GENERIC_REJECTION = "Identity verification failed";

const unavailable = () =>
  new GatewayError(502, "share_auth_unavailable", "Identity verification failed: the verification server did not answer");
const invalidUid = () =>
  new GatewayError(
    502,
    "share_auth_invalid_uid",
    "Identity verification failed: the verification server returned an invalid user id",
  );

export function createShareAuth(opts: ShareAuthOptions): ShareAuth {
  const { observer } = opts;
  const retries = opts.finishRetries ?? 3;
  const backoffMs = opts.finishBackoffMs ?? 500;
  const $fetch = createFetch({ fetch: opts.fetch ?? globalThis.fetch });
  const clock = opts.now && { perf: { now: opts.now }, ttlResolution: 0 };
  const initCache = new LRUCache<string, string>({ max: INIT_CACHE_MAX, ttl: opts.initCacheTtlMs ?? 60_000, ...clock });
  // a made-up token sent again is answered from here, not by another call to the operator; keyed by
  // the token's digest, so the memory of a failure holds no token
  const failedInits = new LRUCache<string, FailedInit>({ max: INIT_CACHE_MAX, ttl: opts.failedInitTtlMs ?? FAILED_INIT_TTL_MS, ...clock });
  /** inits in flight: the same token sent many times at once is one call */
  const asking = new Map<string, Promise<string>>();
  // what init answered for a token, kept longer than the init cache: a start without uid falls back to it
  const initUids = new LRUCache<string, string>({ max: INIT_CACHE_MAX * 4, ttl: INIT_UID_TTL_MS });
  const uidKey = (link: ShareLinkConfig, token: string) => `${link.shareId}\n${tokenDigest(token)}`;
  const closing = new AbortController();
  /** calls in flight, each aborted by its own timer or by close() */
  const calls = new Set<AbortController>();
  /**
   * A call's signal and the function that ends its timer. A timer of its own, not
   * AbortSignal.any([…, AbortSignal.timeout(ms)]): Node 20 may collect that timeout signal before
   * it fires, and a call to a server that never answers then waits for ever (the test forces
   * collections while an init waits).
   */
  function callSignal(link: ShareLinkConfig): { signal: AbortSignal; done: () => void } {
    const call = new AbortController();
    if (closing.signal.aborted) call.abort(closing.signal.reason);
    const timer = setTimeout(() => call.abort(new DOMException("The operation timed out.", "TimeoutError")), link.callbackTimeoutMs);
    calls.add(call);
    return { signal: call.signal, done: () => (clearTimeout(timer), calls.delete(call)) };
  }

  /** One verification call; resolves with the reply's `data` only when `success === true`. */
  async function verify(kind: ShareCallbackKind, link: ShareLinkConfig, path: string, body: object, trace?: RequestTrace): Promise<VerifyData> {
    let status: number | undefined;
    let reply: unknown;
    const call = callSignal(link);
    const span = callbackSpan(trace, path, link.authHost!);
    try {
      const res = await $fetch.raw(path, {
        baseURL: link.authHost,
        method: "POST",
        body,
        headers: span?.headers,
        // a redirect would send the token to whatever host it names: it is a failed check, never followed
        redirect: "manual",
        retry: false,
        ignoreResponseError: true,
        parseResponse: JSON.parse, // a reply that is not JSON is a broken server, not a rejection
        signal: call.signal,
      });
      status = res.status;
      reply = res._data;
    } catch {
      observer.shareCallback(kind, "error");
      throw unavailable();
    } finally {
      call.done();
      span?.end(status);
    }
    const verdict = readVerdict(status, reply);
    if (verdict.kind === "broken") {
      observer.shareCallback(kind, "error");
      throw unavailable();
    }
    if (verdict.kind === "rejected") {
      observer.shareCallback(kind, "rejected");
      throw new GatewayError(403, "share_auth_rejected", verdict.message);
    }
    return verdict.data;
  }

  /** The uid the operator returned, reported as the call's outcome. */
  function acceptUid(kind: ShareCallbackKind, uid: unknown): string {
    if (!isValidUid(uid)) {
      observer.shareCallback(kind, "error");
      throw invalidUid();
    }
    observer.shareCallback(kind, "success");
    return uid;
  }

  async function sendFinish(job: FinishJob): Promise<void> {
    let attempt: ReturnType<typeof callSignal> | undefined;
    let status: number | undefined;
    const span = callbackSpan(job.trace, "/shareAuth/finish", job.link.authHost!);
    try {
      const res = await $fetch.raw("/shareAuth/finish", {
        baseURL: job.link.authHost,
        method: "POST",
        body: job.body,
        headers: span?.headers,
        redirect: "manual",
        responseType: "text",
        retry: retries,
        // ofetch calls this once per retry it is about to make: the one place to count retries
        retryDelay: (ctx) => {
          if (closing.signal.aborted) return 0;
          observer.shareCallback("finish", "retry");
          return backoffMs * 2 ** (retries - Number(ctx.options.retry));
        },
        // a fresh timeout per attempt, ended with its answer or its failure; a closed gateway
        // makes no further attempt
        onRequest: (ctx) => {
          closing.signal.throwIfAborted();
          attempt?.done();
          attempt = callSignal(job.link);
          ctx.options.signal = attempt.signal;
        },
      });
      status = res.status;
      observer.shareCallback("finish", isRedirect(res.status) ? "error" : "success");
    } catch (err) {
      status = (err as { response?: Response }).response?.status;
      observer.shareCallback("finish", "error");
    } finally {
      attempt?.done();
      span?.end(status);
    }
  }

  /** The operator's uid for a token, remembered for the init cache and start's fallback. */
  async function askInit(link: ShareLinkConfig, token: string, key: string, trace?: RequestTrace): Promise<string> {
    const data = await verify("init", link, "/shareAuth/init", { token }, trace);
    const uid = acceptUid("init", data.uid);
    initCache.set(key, uid);
    initUids.set(uidKey(link, token), uid);
    // found again by a start on any instance; a failed write only loses that fallback
    await opts.uids?.rememberShareUid(link.shareId, tokenDigest(token), uid, Date.now()).catch(() => {});
    return uid;
  }

  /** The uid an init on any instance gave for this token, if the store has it. */
  async function storedUid(link: ShareLinkConfig, token: string): Promise<string | undefined> {
    const uid = await opts.uids?.findShareUid(link.shareId, tokenDigest(token), Date.now() - SHARE_UID_KEEP_MS).catch(() => undefined);
    if (uid !== undefined) initUids.set(uidKey(link, token), uid);
    return uid;
  }

  const finishQueue = createWorkQueue(sendFinish, {
    max: opts.finishQueueMax ?? 1000,
    concurrency: FINISH_CONCURRENCY,
  });

  return {
    async init(link, token, trace) {
      if (!link.authHost) return validateUid(token);
      const key = `${link.shareId}\n${link.authHost}\n${token}`;
      const cached = initCache.get(key);
      if (cached !== undefined) return cached;
      const failedKey = `${link.shareId}\n${link.authHost}\n${tokenDigest(token)}`;
      const failed = failedInits.get(failedKey);
      if (failed) throw new GatewayError(failed.status, failed.code, failed.message);
      let pending = asking.get(failedKey);
      if (!pending) {
        pending = askInit(link, token, key, trace).catch((err: unknown) => {
          if (err instanceof GatewayError) failedInits.set(failedKey, { status: err.status, code: err.code, message: err.message });
          throw err;
        });
        asking.set(failedKey, pending);
        pending.finally(() => asking.delete(failedKey)).catch(() => {});
      }
      return pending;
    },

    async start(link, token, question, trace) {
      if (!link.authHost) return validateUid(token);
      const data = await verify("start", link, "/shareAuth/start", { token, question }, trace);
      if (data.uid === undefined || data.uid === null) {
        // the uid init gave for this token (on any instance), else the token's digest — never the
        // token itself, which would then be stored as the chats' owner (docs/api.md#share-links)
        const uid = initUids.get(uidKey(link, token)) ?? (await storedUid(link, token)) ?? tokenDigest(token);
        observer.shareCallback("start", "success");
        return uid;
      }
      return acceptUid("start", data.uid);
    },

    finish(link, token, appName, responseData, trace) {
      if (!link.authHost) return;
      const accepted = !closing.signal.aborted && finishQueue.offer({ link, trace, body: { token, appName, responseData } });
      if (!accepted) observer.shareCallback("finish", "dropped");
    },

    drain: () => finishQueue.drain(),

    async close() {
      closing.abort();
      for (const call of calls) call.abort(closing.signal.reason);
      for (let i = finishQueue.clear(); i > 0; i--) observer.shareCallback("finish", "dropped");
      await finishQueue.drain();
    },
  };
}

/**
 * What a verification reply means: its `data` when the user may go on, the text to show when the
 * operator refused, or "broken" when the reply is no verification answer at all.
 */
function readVerdict(status: number, reply: unknown): Verdict {
  if (isRedirect(status)) return { kind: "broken" };
  const ok = status >= 200 && status < 300;
  if (!isRecord(reply)) return { kind: "broken" };
  if (reply.success === true) {
    return ok ? { kind: "passed", data: isRecord(reply.data) ? reply.data : {} } : { kind: "broken" };
  }
  // an error status counts as a refusal only when the body says so explicitly
  if (!ok && reply.success !== false) return { kind: "broken" };
  return { kind: "rejected", message: pickMessage(reply.message) ?? pickMessage(reply.msg) ?? GENERIC_REJECTION };
}

const isRedirect = (status: number) => status >= 300 && status < 400;

function pickMessage(value: unknown): string | undefined {
  if (typeof value !== "string" || value.trim() === "") return undefined;
  return value.length > MAX_MESSAGE_CHARS ? `${value.slice(0, MAX_MESSAGE_CHARS)}…` : value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
