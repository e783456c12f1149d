// vLLM's per-request `priority` (docs/routing.md#priority-and-fairness), written into a JSON body a
// kind already made: the field goes last in the object, so it wins over one the client may have
// passed through (a JSON parser keeps the last of duplicate members). The body is not parsed: a
// kind's body is one JSON object, and only its closing brace is looked for. A kind that passes a
// client's other fields through drops the client's own `priority` first (withoutClientPriority):
// the only priority an engine is sent is the gateway's, and one without the priority policy refuses
// any.

/** vLLM's field, and the name a kind never passes through from a client. */
export const PRIORITY_FIELD = "priority";

const CLOSE = 0x7d; // }
const OPEN = 0x7b; // {

/** `body` (one JSON object) with `"priority": value` as its last member. */
export function withPriorityField(body: string | Buffer, value: number): string | Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  const end = lastNonSpace(bytes, bytes.length - 1);
  if (end < 0 || bytes[end] !== CLOSE) return body; // not an object: sent as it is
  const before = lastNonSpace(bytes, end - 1);
  const member = `${bytes[before] === OPEN ? "" : ","}"${PRIORITY_FIELD}":${JSON.stringify(value === 0 ? 0 : value)}`;
  const out = Buffer.concat([bytes.subarray(0, end), Buffer.from(member), bytes.subarray(end)]);
  return typeof body === "string" ? out.toString("utf8") : out;
}

/** `fields` without a client's `priority` (the same object when it has none). */
export function withoutClientPriority<T extends Record<string, unknown>>(fields: T): T {
  if (!Object.hasOwn(fields, PRIORITY_FIELD)) return fields;
  const rest: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) if (key !== PRIORITY_FIELD) rest[key] = fields[key];
  return rest as T;
}

function lastNonSpace(bytes: Buffer, from: number): number {
  let i = from;
  while (i >= 0 && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i--;
  return i;
}
