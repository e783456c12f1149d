// The body of aiproxy's channel writes (AddChannelRequest, docs/fastgpt.md#channel-writes), read into
// a Sluice channel. FastGPT's server sends the whole record it read back on every model binding, so
// the aiproxy fields Sluice has no use for are accepted at the values it reports, and refused,
// by name, otherwise; other unknown fields are ignored.
import { z } from "zod";
import { channelSchema, type ChannelConfig } from "../config/schema.js";
import { invalid } from "./envelope.js";
import { DEFAULT_BASE_URL, KEY_MASK, OPENAI_TYPE } from "./channel-view.js";
import { describeIssue } from "../json/issues.js";

const empty = <T extends z.ZodType>(value: T) => value.nullable().optional();
const fixed = (value: unknown) => z.unknown().refine((v) => v === undefined || v === null || v === value, `Sluice keeps it at ${JSON.stringify(value)}`).optional();

const bodySchema = z.object({
  name: z.string().min(1).max(64).optional(),
  type: z.number().int().optional(),
  key: z
    .string()
    .refine((k) => !/[\r\n]/.test(k), "one key per channel: a key may not hold a line break")
    .optional(),
  base_url: z
    .string()
    .refine((u) => u === "" || /^https?:\/\/[^\s]+$/.test(u), "expected an http(s) URL")
    .optional(),
  models: z.array(z.string().min(1)).optional(),
  model_mapping: empty(z.record(z.string().min(1), z.string().min(1))),
  priority: z.number().int().min(0).optional(),
  status: z.union([z.literal(1), z.literal(2)]).optional(),
  proxy_url: fixed(""),
  configs: z.unknown().refine((v) => v === undefined || v === null || (isObject(v) && Object.keys(v).length === 0), "Sluice keeps no channel configs").optional(),
  sets: z.unknown().refine((v) => v === undefined || v === null || (Array.isArray(v) && (v.length === 0 || (v.length === 1 && v[0] === "default"))), 'Sluice keeps ["default"]').optional(),
  skip_tls_verify: fixed(false),
  enabled_auto_balance_check: fixed(false),
  balance_threshold: fixed(0),
  enabled_no_permission_ban: fixed(false),
  warn_error_rate: fixed(0),
  max_error_rate: fixed(0),
});

export type ChannelBody = z.infer<typeof bodySchema>;

/** The body, or 400 naming the first bad field. */
export function readChannelBody(raw: unknown): ChannelBody {
  if (!isObject(raw)) throw invalid("the body must be a JSON object");
  const parsed = bodySchema.safeParse(raw);
  if (!parsed.success) {
    throw invalid(describeIssue(parsed.error.issues[0]!, raw, { words: "schema", root: "body" }).text);
  }
  const body = parsed.data;
  if (body.type !== undefined && body.type !== OPENAI_TYPE)
    throw invalid(`channel type ${body.type} is not supported: Sluice speaks to OpenAI-compatible servers (type 1)`);
  return body;
}

/** The channel a write makes: `current` (a PUT) with the body's fields over it, or a new one. */
export function channelFrom(body: ChannelBody, current: ChannelConfig | undefined, configured: (model: string) => boolean): ChannelConfig {
  if (!current && body.name === undefined) throw invalid("name: required");
  if (!current && !body.models?.length) throw invalid("models: required, at least one");
  if (body.models?.length === 0) throw invalid("models: at least one");
  for (const model of body.models ?? []) if (!configured(model)) throw invalid(`model ${model} is not configured in Sluice`);
  const models = body.models ?? current!.models;
  const mapping = body.model_mapping === undefined ? current?.modelMapping ?? {} : body.model_mapping ?? {};
  for (const model of Object.keys(mapping)) if (!models.includes(model)) throw invalid(`model_mapping: ${model} is not one of the channel's models`);
  const baseUrl = body.base_url === undefined ? current?.baseUrl ?? DEFAULT_BASE_URL : body.base_url || DEFAULT_BASE_URL;
  const keep = body.key === undefined || body.key === KEY_MASK;
  // a kept key would go, with the health check's first call, to whatever server the write names
  if (keep && current?.key && !sameOrigin(baseUrl, current.baseUrl))
    throw invalid('key: a base_url on another server (scheme, host or port) needs the key again, or "" for none; the current key is not sent to a new server');
  const key = keep ? current?.key ?? "" : body.key!;
  const { id: _, ...kept } = current ?? ({} as Partial<ChannelConfig>);
  return channelSchema.parse({
    ...kept,
    name: body.name ?? current!.name,
    type: "openai",
    key,
    baseUrl,
    models: [...new Set(models)],
    modelMapping: mapping,
    weight: body.priority ? body.priority : current?.weight ?? 1,
  });
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
