// OpenAI's file and list objects as Sluice answers them (docs/batches.md), and the ids it makes.
import { randomBytes } from "node:crypto";
import type { FileRow } from "../store/batch-types.js";

/** `file-…`, `batch_…`, `batch_req_…`: 24 random hex digits after the prefix. */
export const newId = (prefix: "file-" | "batch_" | "batch_req_"): string => `${prefix}${randomBytes(12).toString("hex")}`;

export const fileObject = (f: FileRow) => ({
  id: f.id,
  object: "file" as const,
  bytes: f.bytes,
  created_at: Math.floor(f.createdAt / 1000),
  filename: f.filename,
  purpose: f.purpose,
  status: "processed" as const,
});

/** A page of a list: `limit + 1` rows were read, so whether more follow is known. */
export function listObject<T extends { id: string }>(rows: T[], limit: number) {
  const data = rows.slice(0, limit);
  return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
}
