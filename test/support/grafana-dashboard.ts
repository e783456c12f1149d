// Reads grafana/dashboards/sluice.json the way Grafana does for Prometheus: panel queries (rows
// included), template variables and their label_values() queries, and variable interpolation.
import { readFile } from "node:fs/promises";

export const DASHBOARD_FILE = new URL("../../grafana/dashboards/sluice.json", import.meta.url);

export interface DataSourceRef {
  type?: string;
  uid?: string;
}

export interface Variable {
  name: string;
  type: string;
  query?: string | { query: string };
  datasource?: DataSourceRef;
  current?: { value?: unknown };
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}

export interface Panel {
  title?: string;
  datasource?: DataSourceRef;
  targets?: { expr?: string; datasource?: DataSourceRef }[];
  panels?: Panel[];
}

export interface Dashboard {
  __inputs?: { name: string; type: string; pluginId: string }[];
  templating?: { list?: Variable[] };
  panels?: Panel[];
}

export async function readDashboard(): Promise<Dashboard> {
  return JSON.parse(await readFile(DASHBOARD_FILE, "utf8")) as Dashboard;
}

/** Every `targets[].expr` of every panel, rows included. */
export function panelQueries(dashboard: Dashboard): { title: string; expr: string }[] {
  const out: { title: string; expr: string }[] = [];
  const walk = (panels: Panel[] = []) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) if (target.expr) out.push({ title: panel.title ?? "(untitled)", expr: target.expr });
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

export function variables(dashboard: Dashboard): Variable[] {
  return dashboard.templating?.list ?? [];
}

/** A query variable's `label_values(selector, label)`. */
export function labelValuesQuery(variable: Variable): { match: string; label: string } {
  const text = typeof variable.query === "string" ? variable.query : (variable.query?.query ?? "");
  const m = /^label_values\((.+),\s*(\w+)\)$/.exec(text.trim());
  if (!m) throw new Error(`variable ${variable.name}: not a label_values(selector, label) query: ${text}`);
  return { match: m[1]!, label: m[2]! };
}

/** The metric selectors of a PromQL expression: `name{matchers}`. */
export function selectors(expr: string): { metric: string; matchers: string }[] {
  return [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g)].map((m) => ({ metric: m[1]!, matchers: m[2]! }));
}

/** Grafana's own interval variables. 5m keeps a test's traffic inside rate() windows while it polls. */
const BUILT_INS: Record<string, string> = { __rate_interval: "5m", __interval: "15s", __range: "5m" };

/** Puts values in place of `$name` and `${name}`; a variable without a value is an error. */
export function interpolate(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare)!;
    const value = values[name] ?? BUILT_INS[name];
    if (value === undefined) throw new Error(`no value for ${whole} in ${expr}`);
    return value;
  });
}

/** How Grafana's Prometheus data source writes the values picked in a multi-value variable. */
export function pickedValues(values: string[]): string {
  const escaped = values.map((v) => v.replace(/\\/g, "\\\\\\\\").replace(/[$^*{}[\]'+?.()|]/g, "\\\\$&"));
  return escaped.length === 1 ? escaped[0]! : `(${escaped.join("|")})`;
}

/** Every `datasource` reference in the dashboard, wherever it sits. */
export function dataSourceRefs(node: unknown, out: DataSourceRef[] = []): DataSourceRef[] {
  if (Array.isArray(node)) node.forEach((n) => dataSourceRefs(n, out));
  else if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "datasource") out.push(value as DataSourceRef);
      else dataSourceRefs(value, out);
    }
  }
  return out;
}

const PROMQL_WORDS = new Set(["and", "or", "unless", "offset", "bool", "inf", "nan"]);

/** The metric names a PromQL expression reads, with or without label matchers. */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, "") // strings
    .replace(/\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)/g, "") // label lists
    .replace(/\{[^}]*\}|\[[^\]]*\]|\boffset\s+\w+/g, " "); // matchers, ranges and offsets
  const names = [...bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?/g)]
    .filter((m) => !m[2] && !PROMQL_WORDS.has(m[1]!.toLowerCase()))
    .map((m) => m[1]!);
  return [...new Set(names)];
}
