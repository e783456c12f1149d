// Ids of responses and their output items, in the API's shapes (`resp_…`, `msg_…`, `fc_…`, `ctc_…`,
// `rs_…`, `call_…`): 32 random hex digits. randomUUID draws from a cached pool; randomBytes would
// cost a call into the system's generator for every item of every answer.
import { randomUUID } from "node:crypto";

export type IdPrefix = "resp" | "msg" | "fc" | "ctc" | "rs" | "call";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}
