// Transcription uploads in flight (docs/fleet.md#transcription), bounded per key and overall: each
// holds a file of up to `audioLimitBytes` in the spool from its first byte until its request is over,
// so these bound the spool's size and what one key can make the gateway store. One set per process,
// kept across reloads (a reload changes its limits, not the uploads it counts).
import { GatewayError } from "../http/errors.js";

export interface UploadSlotLimits {
  /** server.audioMaxUploads */
  total: number;
  /** server.audioMaxUploadsPerKey */
  perKey: number;
}

export class UploadSlots {
  #total = 0;
  readonly #byKey = new Map<string, number>();

  constructor(public limits: UploadSlotLimits) {}

  /** A slot for `owner`'s upload, and the function that frees it (once, however often called):
   *  429 `too_many_uploads` when the owner has its most, 503 `uploads_busy` when the gateway has. */
  take(owner: string): () => void {
    const mine = this.#byKey.get(owner) ?? 0;
    if (mine >= this.limits.perKey) {
      throw new GatewayError(429, "too_many_uploads", `This key has ${mine} transcription uploads in flight, its most; wait for one to finish.`, { headers: { "Retry-After": "1" } });
    }
    if (this.#total >= this.limits.total) {
      throw new GatewayError(503, "uploads_busy", "The gateway has as many transcription uploads in flight as it takes; retry shortly.", {
        type: "server_error",
        headers: { "Retry-After": "1" },
      });
    }
    this.#total++;
    this.#byKey.set(owner, mine + 1);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.#total--;
      const left = (this.#byKey.get(owner) ?? 1) - 1;
      if (left > 0) this.#byKey.set(owner, left);
      else this.#byKey.delete(owner);
    };
  }
}
