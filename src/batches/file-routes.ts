// `/v1/files` (docs/batches.md#files): uploads of batch input files (multipart, written to a spool
// file as they arrive, refused with 413 past `batches.maxFileBytes` before anything is kept), their
// list, metadata, content and deletion. A file belongs to the uploading key's app: another app's is 404.
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import type { H3Event } from "h3";
import { FastResponse } from "srvx";
import { readAudioUpload } from "../http/multipart-upload.js";
import { routeKey } from "../auth/access.js";
import type { KeyIdentity } from "../auth/keys.js";
import type { BatchesConfig } from "../config/batches-schema.js";
import { GatewayError, badRequest, notFound } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import { nodeRequest } from "../http/node.js";
import { fileObject, listObject, newId } from "./objects.js";
import type { BatchStore } from "../store/batch-types.js";

/** OpenAI's bound on a batch's input lines. */
export const MAX_LINES = 50_000;
const MAX_LIST = 10_000;

export interface BatchRouteDeps {
  store: BatchStore;
  config: BatchesConfig;
  clock: () => number;
}

/** The app of the route's key: a global key has none (403). */
export function appKey(event: H3Event): KeyIdentity & { appId: string } {
  const key = routeKey(event);
  if (key.kind === "global" || !key.appId) {
    throw new GatewayError(403, "app_key_required", "Files and batches belong to an application: use the API key of an application, not a global key.");
  }
  return key as KeyIdentity & { appId: string };
}

export const fileNotFound = (id: string) => notFound("file_not_found", `No file with id ${JSON.stringify(id.slice(0, 100))}.`);
const param = (event: H3Event) => decodeURIComponent(event.context.params?.id ?? "");

export function createFileRoutes(deps: BatchRouteDeps) {
  return {
    async upload(event: H3Event) {
      const key = appKey(event);
      const req = nodeRequest(event);
      if (!req) throw new GatewayError(500, "upload_unsupported", "Uploads need the Node server adapter.", { type: "server_error" });
      const upload = await readAudioUpload({ headers: req.headers, body: req }, { limitBytes: deps.config.maxFileBytes, dir: tmpdir(), what: "the file" });
      try {
        const purpose = upload.fields.findLast(([name]) => name === "purpose")?.[1];
        if (purpose !== "batch") throw badRequest("invalid_request", "purpose: only \"batch\" is supported.", "purpose");
        const bytes = await readFile(upload.path);
        let lines = 0;
        for (let at = bytes.indexOf(10); at >= 0; at = bytes.indexOf(10, at + 1)) lines++;
        if (bytes.length > 0 && bytes[bytes.length - 1] !== 10) lines++;
        if (lines > MAX_LINES) throw badRequest("too_many_lines", `file: at most ${MAX_LINES} lines.`, "file");
        const row = { id: newId("file-"), appId: key.appId, keyName: key.name, purpose: "batch" as const, filename: upload.filename || "file.jsonl", bytes: upload.bytes, createdAt: deps.clock() };
        await deps.store.addFile(row, { bytes });
        return jsonResponse(fileObject(row));
      } finally {
        await upload.remove();
      }
    },
    async list(event: H3Event) {
      const key = appKey(event);
      const q = event.url.searchParams;
      const limit = Math.min(Math.max(Number(q.get("limit") ?? MAX_LIST) || MAX_LIST, 1), MAX_LIST);
      const order = q.get("order") === "asc" ? "asc" : "desc";
      const rows = await deps.store.listFiles(key.appId, { purpose: q.get("purpose") ?? undefined, limit: limit + 1, after: q.get("after") ?? undefined, order });
      return jsonResponse(listObject(rows.map(fileObject), limit));
    },
    async get(event: H3Event) {
      const key = appKey(event);
      const file = await deps.store.getFile(key.appId, param(event));
      if (!file) throw fileNotFound(param(event));
      return jsonResponse(fileObject(file));
    },
    async content(event: H3Event) {
      const key = appKey(event);
      const bytes = await deps.store.fileContent(key.appId, param(event));
      if (!bytes) throw fileNotFound(param(event));
      return new FastResponse(new Uint8Array(bytes), { headers: { "content-type": "application/jsonl" } });
    },
    async remove(event: H3Event) {
      const key = appKey(event);
      const id = param(event);
      if (!(await deps.store.deleteFile(key.appId, id))) throw fileNotFound(id);
      return jsonResponse({ id, object: "file", deleted: true });
    },
  };
}

