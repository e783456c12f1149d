// The usage report's groups (docs/api.md#usage): the usage rows of a range totalled per value of any
// of app, model, kind, finishReason, key, share, user, day and hour. The store groups by its columns
// (and by quarter hours when a day or hour is asked: every time zone's offset is a whole number of
// quarter hours), and the groups are merged here into the kinds of their models and the days and
// hours of the asked time zone. As JSON objects or as CSV.
import type { ModelKind } from "../config/fleet.js";
import { localBucket } from "../time/periods.js";
import type { Store, UsageColumn, UsageGroup, UsageGroupsQuery } from "../store/types.js";
import { roundPoints } from "../tokens/points.js";

export const GROUP_BY = ["app", "model", "kind", "finishReason", "key", "share", "user", "day", "hour"] as const;
export type GroupBy = (typeof GROUP_BY)[number];

const QUARTER_HOUR_MS = 15 * 60_000;
/** A model no longer configured: its rows say nothing of what it was for. */
export const UNKNOWN_KIND = "unknown";

export interface GroupsQuery {
  from?: number;
  to?: number;
  appId?: string;
  by: GroupBy[];
  /** IANA time zone of `day` and `hour` */
  tz: string;
}

export type ReportGroup = Partial<Record<GroupBy, string | null>> & {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  points: number;
};

const TOTALS = ["requests", "inputTokens", "outputTokens", "cachedTokens", "points"] as const;

/** The report's groups, ordered by their values in the order asked (no value first). */
export async function usageGroups(store: Store, kinds: Map<string, ModelKind>, q: GroupsQuery): Promise<ReportGroup[]> {
  // what the store groups by: a kind is its model's, a day or hour its quarter hours'
  const columns = [...new Set(q.by.map((g): UsageColumn | undefined => (g === "kind" ? "model" : g === "day" || g === "hour" ? undefined : g)))].filter(
    (c): c is UsageColumn => c !== undefined,
  );
  const timed = q.by.includes("day") || q.by.includes("hour");
  const query: UsageGroupsQuery = { from: q.from, to: q.to, appId: q.appId, by: columns, bucketMs: timed ? QUARTER_HOUR_MS : undefined };
  const merged = new Map<string, ReportGroup>();
  for (const g of await store.groupUsage(query)) {
    const values = q.by.map((by) => valueOf(by, g, columns, kinds, q.tz));
    const id = JSON.stringify(values);
    let group = merged.get(id);
    if (!group) {
      group = { ...Object.fromEntries(q.by.map((by, i) => [by, values[i]])), requests: 0, inputTokens: 0, outputTokens: 0, cachedTokens: 0, points: 0 };
      merged.set(id, group);
    }
    for (const t of TOTALS) group[t] += g[t];
  }
  const groups = [...merged.values()];
  // summed per store group: kept free of binary-fraction tails like every points figure
  for (const g of groups) g.points = roundPoints(g.points);
  return groups.sort((a, b) => compareGroups(a, b, q.by));
}

function valueOf(by: GroupBy, g: UsageGroup, columns: UsageColumn[], kinds: Map<string, ModelKind>, tz: string): string | null {
  if (by === "day" || by === "hour") return localBucket(g.bucket! * QUARTER_HOUR_MS, by, tz);
  if (by === "kind") return kinds.get(g.values[columns.indexOf("model")]!) ?? UNKNOWN_KIND;
  return g.values[columns.indexOf(by)]!;
}

function compareGroups(a: ReportGroup, b: ReportGroup, by: GroupBy[]): number {
  for (const key of by) {
    const [x, y] = [a[key] ?? null, b[key] ?? null];
    if (x === y) continue;
    if (x === null) return -1;
    if (y === null) return 1;
    return x < y ? -1 : 1;
  }
  return 0;
}

/** The groups as CSV (RFC 4180): a header of the grouped columns and the totals, a line per group. */
export function usageCsv(groups: ReportGroup[], by: GroupBy[]): string {
  const header = [...by, ...TOTALS];
  const lines = [header.join(",")];
  for (const g of groups) lines.push([...by.map((b) => csvField(g[b] ?? "")), ...TOTALS.map((t) => String(g[t]))].join(","));
  return lines.join("\r\n") + "\r\n";
}

/** A value a spreadsheet may run as a formula: its first character is one of OWASP's (=, +, -, @, tab,
 *  CR) or a line feed or NUL (ASVS 1.2.10). */
const FORMULA_START = /^[=+\-@\t\r\n\0]/;
/** Besides a formula, what makes a value quoted: either separator (`,`, or the `;` of spreadsheets in
 *  many locales), a quote, a line break. */
const NEEDS_QUOTES = /[,;"\r\n]/;

/** A field as docs/api.md#usage says (OWASP's advice on CSV injection): user names come from clients.
 *  A formula's first character gets a `'` before it, inside quotes; a value holding either separator,
 *  a quote or a line break is quoted, its quotes doubled. */
function csvField(value: string): string {
  const formula = FORMULA_START.test(value);
  if (!formula && !NEEDS_QUOTES.test(value)) return value;
  return `"${formula ? "'" : ""}${value.replaceAll('"', '""')}"`;
}
