// The PostgreSQL connection side of the postgres store: one pool, timeouts that turn an unreachable
// or stalled server into a 503 `store_unavailable` within a second or two (never a hang), the
// schema brought up to date before the first query, and values that read back as SQLite's do.
import { createRequire } from "node:module";
import type Pg from "pg";
import { GatewayError } from "../http/errors.js";
import { SchemaError, migratePostgres } from "./postgres-migrations.js";

// pg is loaded when a PostgreSQL store is opened: a gateway on SQLite starts without it
// (docs/operations.md#start).
let pgModule: typeof Pg | undefined;
const pg = () => (pgModule ??= createRequire(import.meta.url)("pg") as typeof Pg);

const POOL_MAX = 10;
/** a new connection, or a free one from the pool */
const CONNECT_TIMEOUT_MS = 1_000;
/** the server cancels a statement running longer (a lock wait, an overloaded server) */
const STATEMENT_TIMEOUT_MS = 1_500;
/** the pool drops a connection whose server stopped answering */
const QUERY_TIMEOUT_MS = 2_000;
/** a connection left in a transaction (its process died) frees its locks */
const IDLE_IN_TRANSACTION_MS = 5_000;
/** the usage report may scan many rows: it alone gets longer */
const REPORT_TIMEOUT_MS = 30_000;

/** SQLSTATE classes of a server that cannot serve now: connection, resources, shutdown, system. */
const UNAVAILABLE_CLASSES = new Set(["08", "53", "57", "58"]);
/** serialization failure, deadlock: the same statement may well succeed when retried */
const RETRYABLE = new Set(["40001", "40P01"]);

export interface PgQuery {
  /** a prepared statement's name: parsed once per connection */
  name?: string;
  text: string;
}

export interface PgWrite {
  q: PgQuery;
  values: unknown[];
}

export interface PgPool {
  /** The rows of one reading statement, strings decoded. */
  read<R>(q: PgQuery, values: unknown[]): Promise<R[]>;
  /** One writing statement in a transaction committed only once its result is back: a statement
   *  the store gave up on (a server that stopped answering) is rolled back with its connection,
   *  never committed when the server wakes up after the caller was told 503. */
  write<R>(q: PgQuery, values: unknown[]): Promise<R[]>;
  /** Several writing statements in one such transaction, all sent at once: written whole or not at
   *  all. The rows of each statement, in their order. */
  writeAll(writes: PgWrite[]): Promise<unknown[][]>;
  /** A read-only statement allowed REPORT_TIMEOUT_MS (the usage report). */
  report<R>(q: PgQuery, values: unknown[]): Promise<R[]>;
  /** Resolves once the server answers (and the schema is current). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function createPgPool(url: string): PgPool {
  const pool = new (pg().Pool)({
    connectionString: url,
    max: POOL_MAX,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    keepAlive: true,
    application_name: "sluice",
    pipeline: true,
    types: { getTypeParser: typeParser },
  });
  // an idle connection died (server restarted, network cut): the pool has dropped it already, and
  // an unhandled 'error' event would end the process
  pool.on("error", ignore);

  // migrations run once, before the first statement; a failure is tried again at the next call
  let migrated: Promise<void> | undefined;
  const ready = () => (migrated ??= migratePostgres(pool).catch((err: unknown) => ((migrated = undefined), Promise.reject(err))));

  async function read<R>(q: PgQuery, values: unknown[]): Promise<R[]> {
    try {
      await ready();
      const res = await pool.query({ name: q.name, text: q.text, values: values.map(toDb) });
      return res.rows.map(fromDbRow) as R[];
    } catch (err) {
      throw asStoreError(err);
    }
  }

  /** `statements` in a transaction that `begin` opens: all sent at once (the connections pipeline),
   *  COMMIT sent once every statement's rows are back; the rows of each. */
  async function inTransaction(begin: string, statements: Array<Pg.QueryConfig & { query_timeout?: number }>): Promise<unknown[][]> {
    let client: Pg.PoolClient | undefined;
    try {
      await ready();
      client = await pool.connect();
      // between its queries a checked-out connection has no listener of the pool's: a server's
      // goodbye arriving right then must not end the process (the next query fails instead)
      client.on("error", ignore);
      const open = client;
      const results = await Promise.all([open.query(begin), ...statements.map((statement) => open.query(statement))]);
      await client.query("COMMIT");
      client.off("error", ignore);
      client.release();
      return results.slice(1).map((result) => result.rows.map(fromDbRow));
    } catch (err) {
      // mid-transaction or broken: never handed back to the pool
      client?.release(true);
      throw asStoreError(err);
    }
  }

  return {
    read,
    write: async <R>(q: PgQuery, values: unknown[]) => (await inTransaction("BEGIN", [{ name: q.name, text: q.text, values: values.map(toDb) }]))[0] as R[],
    writeAll: (writes) => inTransaction("BEGIN", writes.map(({ q, values }) => ({ name: q.name, text: q.text, values: values.map(toDb) }))),
    report: async <R>(q: PgQuery, values: unknown[]) =>
      (
        await inTransaction(`BEGIN READ ONLY; SET LOCAL statement_timeout = ${REPORT_TIMEOUT_MS}`, [
          { text: q.text, values: values.map(toDb), query_timeout: REPORT_TIMEOUT_MS + QUERY_TIMEOUT_MS },
        ])
      )[0] as R[],
    ping: () => read({ name: "ping", text: "SELECT 1" }, []).then(() => undefined),
    close: () => pool.end(),
  };
}

const ignore = () => {};

/** Whether a failed transaction of several writes is worth redoing write by write: the server
 *  refused one of its statements (a bad row should fail alone) or picked it to end a deadlock. Not
 *  when the server is unreachable or too slow: each write would wait for it again. */
export function failedByItsWrites(err: unknown): boolean {
  const cause = err instanceof GatewayError ? err.cause : err;
  return cause instanceof pg().DatabaseError && (cause === err || RETRYABLE.has(cause.code ?? ""));
}

/** bigint columns (epoch ms, tokens, counts) as numbers, like better-sqlite3's integers */
function typeParser(oid: number, format?: "text" | "binary") {
  if (oid === pg().types.builtins.INT8) return (value: string) => Number(value);
  return pg().types.getTypeParser(oid, format);
}

/** A server error that is about the server's state, or any failure to talk to it, is a 503;
 *  an error in the statement itself stays what it is (a 500 that reveals nothing). */
function asStoreError(err: unknown): unknown {
  if (err instanceof SchemaError) return err;
  if (err instanceof pg().DatabaseError && !UNAVAILABLE_CLASSES.has(err.code?.slice(0, 2) ?? "") && !RETRYABLE.has(err.code ?? "")) return err;
  // the cause is for the start-up message (openStore); responses show only the message above
  return new GatewayError(503, "store_unavailable", "The gateway cannot reach its store; retry shortly.", {
    type: "api_error",
    headers: { "Retry-After": "1" },
    cause: err,
  });
}

// PostgreSQL text cannot hold U+0000, which SQLite stores as given: it is written as U+FFFF "0",
// and U+FFFF itself (a noncharacter, rare in text) as U+FFFF U+FFFF, so such strings read back as
// written. A lone surrogate reads back from SQLite as three U+FFFD (the bytes it keeps for it, read
// as UTF-8): written so here too, where it would otherwise become one.
const NEEDS_ESCAPE = /[\u0000\uffff\ud800-\udfff]/;
const ESCAPED_ON_WRITE = /[\u0000\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const ESCAPED_ON_READ = /\uffff([0\uffff])/g;

function escapeChar(c: string): string {
  if (c === "\u0000") return "\uffff0";
  return c === "\uffff" ? "\uffff\uffff" : "\ufffd\ufffd\ufffd";
}

function toDb(value: unknown): unknown {
  if (typeof value === "string") return NEEDS_ESCAPE.test(value) ? value.replace(ESCAPED_ON_WRITE, escapeChar) : value;
  return Array.isArray(value) ? value.map(toDb) : value;
}

/** A string as it was before toDb escaped it: for strings read from inside a JSON value, which
 *  fromDbRow does not look into. */
export function unescapeText(value: string): string {
  return value.includes("\uffff") ? value.replace(ESCAPED_ON_READ, (_, c: string) => (c === "0" ? "\u0000" : "\uffff")) : value;
}

function fromDbRow(row: Record<string, unknown>): Record<string, unknown> {
  for (const [column, value] of Object.entries(row)) {
    if (typeof value === "string") row[column] = unescapeText(value);
  }
  return row;
}
