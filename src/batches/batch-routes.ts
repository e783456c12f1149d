// `/v1/batches` (docs/batches.md#batches): creation — the input file validated at once, the batch and
// its lines kept in one commit, its key's QPM counting this request once — retrieval, list and
// cancel. A batch belongs to its key's app: another app's is 404.
import type { H3Event } from "h3";
import { identifyCaller, type CallerDeps } from "../metered/caller.js";
import type { Quota } from "../metered/quota.js";
import { badRequest, notFound } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import { appKey, fileNotFound, type BatchRouteDeps } from "./file-routes.js";
import { listObject, newId } from "./objects.js";
import type { BatchObject } from "../store/batch-types.js";
import { validateLines } from "./validate.js";

export const ENDPOINTS = ["/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/responses"] as const;
const WINDOW_S = 24 * 3600;
const MAX_LIST = 100;

export interface BatchCreateDeps extends BatchRouteDeps {
  caller: CallerDeps;
  quota: Quota;
  /** the configured model a line's name stands for, if the app may use it for the endpoint */
  modelOf: (appId: string, endpoint: string, model: string) => string | undefined;
  /** a new batch in progress: the runner looks at once */
  wake: () => void;
}

const batchNotFound = (id: string) => notFound("batch_not_found", `No batch with id ${JSON.stringify(id.slice(0, 100))}.`);
const param = (event: H3Event) => decodeURIComponent(event.context.params?.id ?? "");
const seconds = (ms: number) => Math.floor(ms / 1000);

export function createBatchRoutes(deps: BatchCreateDeps) {
  const readBody = async (event: H3Event): Promise<Record<string, unknown>> => {
    const body: unknown = await event.req.json().catch(() => undefined);
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("invalid_request", "The body must be a JSON object.");
    return body as Record<string, unknown>;
  };

  return {
    async create(event: H3Event) {
      const key = appKey(event);
      const now = deps.clock();
      // the key's QPM counts the batch once; its lines are paced by idle capacity instead
      const caller = identifyCaller(deps.caller, key, {}, now, "Batches");
      await deps.quota.precheck(caller.limits, 0, now);
      const body = await readBody(event);
      const endpoint = body.endpoint;
      if (typeof endpoint !== "string" || !(ENDPOINTS as readonly string[]).includes(endpoint)) {
        throw badRequest("invalid_request", `endpoint: one of ${ENDPOINTS.join(", ")}.`, "endpoint");
      }
      if (body.completion_window !== "24h") throw badRequest("invalid_request", 'completion_window: only "24h" is supported.', "completion_window");
      const fileId = typeof body.input_file_id === "string" ? body.input_file_id : "";
      const file = await deps.store.getFile(key.appId, fileId);
      if (!file || file.purpose !== "batch") throw fileNotFound(fileId);
      const bytes = (await deps.store.fileContent(key.appId, fileId)) ?? Buffer.alloc(0);
      const { lines, errors } = validateLines(bytes, endpoint, (model) => deps.modelOf(key.appId, endpoint, model));
      const at = seconds(now);
      const failed = errors.length > 0;
      const batch: BatchObject = {
        id: newId("batch_"),
        object: "batch",
        endpoint,
        errors: failed ? { object: "list", data: errors } : null,
        input_file_id: fileId,
        completion_window: "24h",
        status: failed ? "failed" : "in_progress",
        output_file_id: null,
        error_file_id: null,
        created_at: at,
        in_progress_at: failed ? null : at,
        expires_at: at + WINDOW_S,
        finalizing_at: null,
        completed_at: null,
        failed_at: failed ? at : null,
        expired_at: null,
        cancelling_at: null,
        cancelled_at: null,
        request_counts: { total: failed ? 0 : lines.length, completed: 0, failed: 0 },
        metadata: metadataOf(body.metadata),
        usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      };
      await deps.store.createBatch({ appId: key.appId, keyName: key.name, batch }, failed ? [] : lines);
      if (!failed) deps.wake();
      return jsonResponse(batch);
    },
    async get(event: H3Event) {
      const key = appKey(event);
      const found = await deps.store.getBatch(key.appId, param(event));
      if (!found) throw batchNotFound(param(event));
      return jsonResponse(found.batch);
    },
    async list(event: H3Event) {
      const key = appKey(event);
      const q = event.url.searchParams;
      const limit = Math.min(Math.max(Number(q.get("limit") ?? 20) || 20, 1), MAX_LIST);
      const rows = await deps.store.listBatches(key.appId, { limit: limit + 1, after: q.get("after") ?? undefined });
      return jsonResponse(listObject(rows.map((r) => r.batch), limit));
    },
    async cancel(event: H3Event) {
      const key = appKey(event);
      const id = param(event);
      for (;;) {
        const found = await deps.store.getBatch(key.appId, id);
        if (!found) throw batchNotFound(id);
        const b = found.batch;
        if (b.status !== "in_progress" && b.status !== "validating") return jsonResponse(b);
        const next: BatchObject = { ...b, status: "cancelling", cancelling_at: seconds(deps.clock()) };
        // no new line from now on: the lines not started are cancelled in the same commit
        if (await deps.store.updateBatch(next, [b.status], { from: ["pending"], to: "cancelled" })) {
          deps.wake();
          return jsonResponse(next);
        }
      }
    },
  };
}

/** OpenAI's metadata: at most 16 string pairs. */
function metadataOf(value: unknown): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw badRequest("invalid_request", "metadata: an object of strings.", "metadata");
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 16 || entries.some(([k, v]) => typeof v !== "string" || k.length > 64 || v.length > 512)) {
    throw badRequest("invalid_request", "metadata: at most 16 pairs, keys up to 64 and values up to 512 characters.", "metadata");
  }
  return Object.fromEntries(entries) as Record<string, string>;
}
