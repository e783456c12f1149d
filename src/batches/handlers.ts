// The files and batches routes of a runtime (docs/batches.md), by the names the route table gives
// them; with `batches.enabled` false each is a 404.
import type { H3Event } from "h3";
import type { CallerDeps } from "../metered/caller.js";
import type { Quota } from "../metered/quota.js";
import { notFound } from "../http/errors.js";
import type { Reply } from "../http/node.js";
import { createBatchRoutes } from "./batch-routes.js";
import { createFileRoutes, type BatchRouteDeps } from "./file-routes.js";
import { batchModelOf, type BatchModelDeps } from "./models.js";

export interface BatchHandlerDeps extends BatchRouteDeps {
  caller: CallerDeps;
  quota: Quota;
  models: BatchModelDeps;
  wake: () => void;
}

type Handler = (event: H3Event) => Promise<Reply>;

export function createBatchHandlers(deps: BatchHandlerDeps) {
  const files = createFileRoutes(deps);
  const batches = createBatchRoutes({ ...deps, modelOf: batchModelOf(deps.models) });
  const on = (h: Handler): Handler => (deps.config.enabled ? h : async () => Promise.reject(notFound("not_found", "No such endpoint.")));
  return {
    fileUpload: on(files.upload),
    fileList: on(files.list),
    fileGet: on(files.get),
    fileContent: on(files.content),
    fileDelete: on(files.remove),
    batchCreate: on(batches.create),
    batchGet: on(batches.get),
    batchList: on(batches.list),
    batchCancel: on(batches.cancel),
  };
}
