// config.json's `batches` block (docs/configuration.md#batches): OpenAI's Files and Batch API run by
// Sluice on the fleet's idle capacity (docs/batches.md) — where files are kept, how large they may
// be, how many lines run at once and when a channel has room for one.
import { z } from "zod";

const MIB = 1024 * 1024;

export const batchesSchema = z.strictObject({
  /** false: the files and batches endpoints answer 404 and no line runs */
  enabled: z.boolean().default(true),
  /** where file bytes are kept (SQLite); absent: a `batches` folder beside the SQLite file */
  dir: z.string().min(1).optional(),
  /** the largest file accepted (413 file_too_large past it) */
  maxFileBytes: z.number().int().positive().default(200 * MIB),
  /** the priority of a batch line in a channel's queue: after every interactive call */
  priority: z.number().int().max(0).default(-1000),
  /** lines run at once per instance */
  concurrency: z.number().int().positive().max(256).default(4),
  /** the share of a channel's `concurrency` kept free for interactive calls (at least 1 slot) */
  reserve: z.number().min(0).max(1).default(0.125),
  /** lines at once on a channel without `concurrency` */
  perChannel: z.number().int().positive().default(2),
  /** no new line on a channel whose engine reports more waiting requests than this */
  maxEngineWaiting: z.number().int().min(0).default(0),
  /** a claimed line whose instance stopped renewing is taken over after this */
  leaseMs: z.number().int().min(1_000).default(60_000),
  /** lines still running this long after a cancel are cut */
  cancelGraceMs: z.number().int().min(0).default(30_000),
  /** files and batches older than this are purged */
  retentionDays: z.number().positive().max(3650).default(30),
});

export type BatchesConfig = z.infer<typeof batchesSchema>;
