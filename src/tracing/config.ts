// The `tracing` block of the config (docs/tracing.md#config), and where spans go when the config has
// none: OpenTelemetry's environment variables. No endpoint at all: tracing is off.
import { z } from "zod";

export const tracingSchema = z.strictObject({
  /** the collector's OTLP/HTTP base (`http://collector:4318`): spans are posted to `{endpoint}/v1/traces` */
  endpoint: z.url({ protocol: /^https?$/ }).optional(),
  /** sent with every export (a collector's own auth) */
  headers: z.record(z.string().min(1), z.string()).default({}),
  /** the share of new traces kept; an incoming sampled trace is continued whatever this is */
  sampleRatio: z.number().min(0).max(1).default(1),
  serviceName: z.string().min(1).max(200).default("sluice"),
  /** false: every request starts a trace of its own, the incoming one kept as a link */
  trustIncoming: z.boolean().default(true),
  exportTimeoutMs: z.number().int().positive().max(300_000).default(10_000),
  /** spans waiting for export at most; past it new ones are dropped and counted */
  maxQueue: z.number().int().positive().max(1_000_000).default(2048),
});

export type TracingConfig = z.infer<typeof tracingSchema>;

/** What a tracer provider is made of: the config's block with its endpoint as the URL posted to. */
export interface TracingOptions extends Omit<TracingConfig, "endpoint"> {
  /** the full URL of the export (`…/v1/traces`) */
  url: string;
}

const TRACES_PATH = "/v1/traces";

/** The options tracing runs with, or undefined when it is off. The environment's
 *  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL) or OTEL_EXPORTER_OTLP_ENDPOINT (a base) is read
 *  only when the config has no `tracing` block. */
export function tracingOptions(block: TracingConfig | undefined, env: NodeJS.ProcessEnv): TracingOptions | undefined {
  if (block) return block.endpoint ? { ...block, url: tracesUrl(block.endpoint) } : undefined;
  const full = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const url = full || (base ? tracesUrl(base) : undefined);
  if (!url) return undefined;
  return { ...tracingSchema.parse({}), url };
}

function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, "");
  return base.endsWith(TRACES_PATH) ? base : `${base}${TRACES_PATH}`;
}
