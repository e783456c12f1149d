// The SQLite half of the Store that holds usage rows and spend counters. Rows and spend of a write
// batch are gathered and written once at its end (multi-row INSERTs, one upsert per scope): a
// statement costs about as much as the row it writes.
import type Database from "better-sqlite3";
import { USAGE_COLUMNS, USAGE_INSERT_COLUMNS, addSpend, usageGroupOf, usageGroupSql, usageValues } from "./rows.js";
import type { Batched, Gathered } from "./write-batch.js";
import type { UsageGroup, UsageGroupsQuery, UsageQuery, UsageRow, UsageSummary, UsageTotals } from "./types.js";

const MAX_ROWS_PER_INSERT = 32;

interface SummaryRow extends UsageTotals {
  name: string | null;
}
interface UsageFilter {
  from: number;
  to: number;
  appId: string | null;
}

export type UsageGatherer = Gathered & { add(row: UsageRow, scopes: string[]): void };

const UPSERT_SPEND = `INSERT INTO spend (scope, points) VALUES (?, ?)
  ON CONFLICT (scope) DO UPDATE SET points = points + excluded.points`;
const insertSql = (rows: number) => `INSERT INTO usage (${USAGE_INSERT_COLUMNS}) VALUES ${Array.from({ length: rows }, () => `(${Array(USAGE_COLUMNS).fill("?").join(", ")})`).join(", ")}`;


export function createUsageGatherer(db: Database.Database): UsageGatherer {
  const upsertSpend = db.prepare<[string, number]>(UPSERT_SPEND);
  // one prepared INSERT per row count, made when first needed (at most MAX_ROWS_PER_INSERT of them)
  const inserts = new Map<number, Database.Statement<unknown[]>>();
  const insert = (rows: number) => {
    let statement = inserts.get(rows);
    if (!statement) {
      // positional parameters: binding by name costs measurably more on the hot path
      statement = db.prepare<unknown[]>(insertSql(rows));
      inserts.set(rows, statement);
    }
    return statement;
  };
  let values: unknown[] = [];
  const spend = new Map<string, number>();

  return {
    add(row, scopes) {
      values.push(...usageValues(row));
      addSpend(spend, row.points, scopes);
    },
    flush() {
      const step = MAX_ROWS_PER_INSERT * USAGE_COLUMNS;
      for (let at = 0; at < values.length; at += step) {
        const part = values.length <= step ? values : values.slice(at, at + step);
        insert(part.length / USAGE_COLUMNS).run(part);
      }
      for (const [scope, points] of spend) upsertSpend.run(scope, points);
      this.clear();
    },
    clear() {
      values = [];
      spend.clear();
    },
  };
}

export function createUsageOps(db: Database.Database, batched: Batched, usage: UsageGatherer) {
  const totals = `COUNT(*) AS requests, COALESCE(SUM(input_tokens), 0) AS inputTokens,
    COALESCE(SUM(output_tokens), 0) AS outputTokens, COALESCE(SUM(points), 0) AS points`;
  const filter = `WHERE time >= @from AND time < @to AND (@appId IS NULL OR app_id = @appId)`;
  // names in byte order (BINARY), NULL first
  const grouped = (column: string) =>
    db.prepare<UsageFilter, SummaryRow>(`SELECT ${column} AS name, ${totals} FROM usage ${filter} GROUP BY ${column} ORDER BY ${column}`);
  const sql = {
    totals: db.prepare<UsageFilter, UsageTotals>(`SELECT ${totals} FROM usage ${filter}`),
    byApp: grouped("app_id"),
    byModel: grouped("model"),
    byFinishReason: grouped("finish_reason"),
    getSpent: db.prepare<[string], { points: number }>(`SELECT points FROM spend WHERE scope = ?`),
  };
  // one statement per shape of the report (at most 2^6 × 2 of them)
  const groupStatements = new Map<string, Database.Statement<UsageFilter, Record<string, unknown>>>();
  const groupStatement = (q: UsageGroupsQuery) => {
    const { select, groupBy } = usageGroupSql(q);
    const text = `SELECT ${select}${totals}, COALESCE(SUM(cached_tokens), 0) AS cachedTokens FROM usage ${filter} ${groupBy}`;
    let statement = groupStatements.get(text);
    if (!statement) groupStatements.set(text, (statement = db.prepare<UsageFilter, Record<string, unknown>>(text)));
    return statement;
  };
  // gathered in the batch's transaction, written once at its end
  const recordUsage = batched((row: UsageRow, scopes: string[]) => usage.add(row, scopes));

  return {
    recordUsage,
    async summarizeUsage(query: UsageQuery): Promise<UsageSummary> {
      const f: UsageFilter = {
        from: query.from ?? Number.MIN_SAFE_INTEGER,
        to: query.to ?? Number.MAX_SAFE_INTEGER,
        appId: query.appId ?? null,
      };
      const summary: UsageSummary = {
        totals: { ...(sql.totals.get(f) ?? { requests: 0, inputTokens: 0, outputTokens: 0, points: 0 }) },
        apps: sql.byApp.all(f).map(({ name, ...t }) => ({ appId: name!, ...t })),
        models: sql.byModel.all(f).map(({ name, ...t }) => ({ model: name!, ...t })),
      };
      if (query.groupBy === "finishReason") summary.finishReasons = sql.byFinishReason.all(f).map(({ name, ...t }) => ({ finishReason: name, ...t }));
      return summary;
    },
    async groupUsage(query: UsageGroupsQuery): Promise<UsageGroup[]> {
      const f: UsageFilter = { from: query.from ?? Number.MIN_SAFE_INTEGER, to: query.to ?? Number.MAX_SAFE_INTEGER, appId: query.appId ?? null };
      // no rows: no group (COUNT(*) over nothing is one row of zeros without GROUP BY)
      return groupStatement(query).all(f).filter((r) => Number(r.requests) > 0).map((r) => usageGroupOf(r, query));
    },
    async getSpent(scope: string): Promise<number> {
      return sql.getSpent.get(scope)?.points ?? 0;
    },
  };
}
