// config.json's `routing` block (docs/configuration.md#routing): attempts, breakers, aging, and where a
// request goes — by prefix, by session or least-loaded — with the prefix score's weights and guard.
import { z } from "zod";

export const routingSchema = z.strictObject({
  /** Channels tried for one request before the first byte, in all (docs/api.md#upstream-failures). */
  maxAttempts: z.number().int().positive().default(3),
  /** Consecutive failed attempts that open a channel's breaker, and for how long at first. */
  breaker: z
    .strictObject({
      failures: z.number().int().positive().default(5),
      cooldownMs: z.number().int().positive().default(30_000),
      /** The longest a breaker stays open at once: the doubling and an upstream's Retry-After stop here. */
      maxCooldownMs: z.number().int().positive().default(300_000),
    })
    .refine((b) => b.cooldownMs <= b.maxCooldownMs, { message: "cooldownMs must not exceed maxCooldownMs", path: ["cooldownMs"] })
    .prefault({}),
  /** A queued call gains one priority for each agingMs it has waited, so none starves. */
  agingMs: z.number().int().positive().default(10_000),
  /** `prefix`: by what each replica holds, sessions kept (docs/routing.md#prefix); `session`: a request
   *  with a session stays on its rendezvous replica (docs/routing.md#pick); `off`: every request goes least-loaded. */
  affinity: z.enum(["prefix", "session", "off"]).default("prefix"),
  /** A pinned channel whose load is at least spillLoad × (the least other load + 1) spills the request (`session`). */
  spillLoad: z.number().min(1).default(2),
  /** The weights of a channel's score with `affinity: "prefix"` (docs/routing.md#prefix). */
  prefix: z
    .strictObject({
      match: z.number().min(0).default(3),
      load: z.number().min(0).default(2),
      kv: z.number().min(0).default(1),
    })
    .prefault({}),
  /** The group is imbalanced (the least loaded wins) when its busiest channel's load is over ratio ×
   *  the least's and more than min above it; a session leaves its channel past the same (docs/routing.md#prefix). */
  imbalance: z
    .strictObject({
      ratio: z.number().min(1).default(2),
      min: z.number().min(0).default(4),
    })
    .prefault({}),
});
