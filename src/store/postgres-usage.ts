// The PostgreSQL half of the Store that holds usage rows and spend counters: a batch's rows in one
// statement with its spend, added once per scope (postgres.ts commits it with the batch); the
// report in one scan.
import type { PgPool, PgWrite } from "./postgres-pool.js";
import { asEpoch } from "./postgres-chats.js";
import { USAGE_COLUMNS, USAGE_INSERT_COLUMNS, addSpend, usageGroupOf, usageGroupSql, usageValues } from "./rows.js";
import type { UsageGroup, UsageGroupsQuery, UsageQuery, UsageRow, UsageSummary, UsageTotals } from "./types.js";

export type UsageWrite = { kind: "usage"; row: UsageRow; scopes: string[] };

interface SummaryRow extends UsageTotals {
  /** GROUPING(app_id, model, finish_reason): 7 the totals, 3 one app, 5 one model, 6 one finish reason */
  level: number;
  app_id: string | null;
  model: string | null;
  finish_reason: string | null;
}

/** One scan for the totals and each grouping; names in byte order like SQLite's BINARY, NULL first.
 *  Without finish reasons the levels are numbered as with them. */
function summarySql(byFinishReason: boolean): string {
  const [level, reason, sets] = byFinishReason
    ? ["GROUPING(app_id, model, finish_reason)", "finish_reason", "(), (app_id), (model), (finish_reason)"]
    : ["GROUPING(app_id, model) * 2 + 1", "NULL::text", "(), (app_id), (model)"];
  return `SELECT ${level} AS level, app_id, model, ${reason} AS finish_reason, COUNT(*) AS requests,
      COALESCE(SUM(input_tokens), 0)::bigint AS "inputTokens", COALESCE(SUM(output_tokens), 0)::bigint AS "outputTokens",
      COALESCE(SUM(points), 0)::float8 AS points
    FROM usage WHERE time >= $1 AND time < $2 AND ($3::text IS NULL OR app_id = $3)
    GROUP BY GROUPING SETS (${sets})
    ORDER BY app_id COLLATE "C", model COLLATE "C"${byFinishReason ? `, finish_reason COLLATE "C" NULLS FIRST` : ""}`;
}

const SQL = {
  // a batch's usage rows, and its points added once per scope (scopes in one order, see usageValues)
  recordUsage: {
    name: "record-usage-v4",
    text: `WITH inserted AS (
        INSERT INTO usage (${USAGE_INSERT_COLUMNS})
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
          $9::numeric[], $10::integer[], $11::bigint[], $12::text[], $13::text[],
          $14::text[], $15::text[], $16::bigint[], $17::integer[], $18::bigint[], $19::text[], $20::bigint[], $21::text[], $22::text[],
          $23::text[], $24::text[])
      )
      INSERT INTO spend (scope, points) SELECT * FROM unnest($25::text[], $26::float8[])
      ON CONFLICT (scope) DO UPDATE SET points = spend.points + EXCLUDED.points`,
  },
  getSpent: { name: "get-spent", text: `SELECT points FROM spend WHERE scope = $1` },
  summarize: { text: summarySql(false) },
  summarizeByFinishReason: { text: summarySql(true) },
};

/** The batch's usage rows as one statement: one array per column, then the scopes (sorted: every
 *  instance locks the counters in one order) and the points each gets. */
export function usageWrite(usage: UsageWrite[]): PgWrite {
  const columns: unknown[][] = Array.from({ length: USAGE_COLUMNS }, () => []);
  const spend = new Map<string, number>();
  for (const { row, scopes } of usage) {
    usageValues(row).forEach((v, i) => columns[i]!.push(v));
    addSpend(spend, row.points, scopes);
  }
  const scopes = [...spend.keys()].sort();
  return { q: SQL.recordUsage, values: [...columns, scopes, scopes.map((scope) => spend.get(scope))] };
}


export function createPgUsageOps(db: PgPool, write: (usage: UsageWrite) => Promise<unknown>) {
  return {
    async recordUsage(row: UsageRow, scopes: string[]): Promise<void> {
      await write({ kind: "usage", row, scopes });
    },
    async summarizeUsage(query: UsageQuery): Promise<UsageSummary> {
      const from = asEpoch(query.from ?? Number.MIN_SAFE_INTEGER);
      const to = asEpoch(query.to ?? Number.MAX_SAFE_INTEGER);
      const byFinishReason = query.groupBy === "finishReason";
      const rows = await db.report<SummaryRow>(byFinishReason ? SQL.summarizeByFinishReason : SQL.summarize, [from, to, query.appId ?? null]);
      const totalsOf = ({ requests, inputTokens, outputTokens, points }: SummaryRow): UsageTotals => ({ requests, inputTokens, outputTokens, points });
      const summary: UsageSummary = {
        totals: totalsOf(rows.find((r) => r.level === 7)!),
        apps: rows.filter((r) => r.level === 3).map((r) => ({ appId: r.app_id!, ...totalsOf(r) })),
        models: rows.filter((r) => r.level === 5).map((r) => ({ model: r.model!, ...totalsOf(r) })),
      };
      if (byFinishReason) summary.finishReasons = rows.filter((r) => r.level === 6).map((r) => ({ finishReason: r.finish_reason, ...totalsOf(r) }));
      return summary;
    },
    async groupUsage(query: UsageGroupsQuery): Promise<UsageGroup[]> {
      const { select, groupBy } = usageGroupSql(query);
      const text = `SELECT ${select}COUNT(*) AS requests, COALESCE(SUM(input_tokens), 0)::bigint AS "inputTokens",
          COALESCE(SUM(output_tokens), 0)::bigint AS "outputTokens", COALESCE(SUM(points), 0)::float8 AS points,
          COALESCE(SUM(cached_tokens), 0)::bigint AS "cachedTokens"
        FROM usage WHERE time >= $1 AND time < $2 AND ($3::text IS NULL OR app_id = $3) ${groupBy}`;
      const values = [asEpoch(query.from ?? Number.MIN_SAFE_INTEGER), asEpoch(query.to ?? Number.MAX_SAFE_INTEGER), query.appId ?? null];
      const rows = await db.report<Record<string, unknown>>({ text }, values);
      return rows.filter((r) => Number(r.requests) > 0).map((r) => usageGroupOf(r, query));
    },
    async getSpent(scope: string): Promise<number> {
      const [row] = await db.read<{ points: number }>(SQL.getSpent, [scope]);
      return row?.points ?? 0;
    },
  };
}
