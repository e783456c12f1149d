// The OpenMetrics text of a registry (docs/tracing.md#exemplars): the exposition Prometheus asks for
// first, and the only one that carries exemplars, the trace ids Grafana jumps to from a slow bucket.
// Rendered here from the registry's JSON rather than by prom-client's OpenMetrics mode, which strips
// `_total` from each counter's name in place (lib/registry.js) and so would change the Prometheus
// text of the same registry after it.
import type { Registry } from "prom-client";

export const OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/** what prom-client's get() gives per sample, its exemplar included (lib/histogram.js setValuePair) */
interface Sample {
  value: number;
  labels?: Record<string, string | number>;
  sharedLabels?: Record<string, string | number>;
  metricName?: string;
  exemplar?: { labelSet: Record<string, string>; value: number; timestamp?: number } | null;
}

/** Does the scrape's Accept header ask for OpenMetrics (as Prometheus's default scrape protocols do)? */
export function wantsOpenMetrics(accept: string | null): boolean {
  return accept !== null && /application\/openmetrics-text(?![^,]*;\s*q=0(?:\.0*)?\s*(?:,|$))/i.test(accept);
}

export async function renderOpenMetrics(registry: Registry): Promise<string> {
  const lines: string[] = [];
  for (const family of await registry.getMetricsAsJSON()) {
    const counter = String(family.type) === "counter";
    const name = counter ? family.name.replace(/_total$/, "") : family.name;
    lines.push(`# TYPE ${name} ${family.type}`, `# HELP ${name} ${escape(family.help)}`);
    for (const sample of family.values as Sample[]) {
      let line = `${sample.metricName ?? (counter ? `${name}_total` : name)}${labels({ ...sample.sharedLabels, ...sample.labels })} ${number(sample.value)}`;
      const { exemplar } = sample;
      if (exemplar?.labelSet) line += ` # ${labels(exemplar.labelSet)} ${number(exemplar.value)}${exemplar.timestamp === undefined ? "" : ` ${exemplar.timestamp}`}`;
      lines.push(line);
    }
  }
  lines.push("# EOF");
  return `${lines.join("\n")}\n`;
}

function labels(set: Record<string, string | number>): string {
  const pairs = Object.entries(set).map(([name, value]) => `${name}="${escape(String(value))}"`);
  return pairs.length ? `{${pairs.join(",")}}` : "";
}

function escape(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function number(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}
