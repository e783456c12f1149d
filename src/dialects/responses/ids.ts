// Ids of responses and their output items, in the API's shapes (`resp_…`, `msg_…`, `fc_…`, `ctc_…`, `rs_…`, `call_…`).
import { randomBytes } from "node:crypto";

export type IdPrefix = "resp" | "msg" | "fc" | "ctc" | "rs" | "call";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(16).toString("hex")}`;
}
