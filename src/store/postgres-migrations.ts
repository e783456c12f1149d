// The PostgreSQL schema and its versions. `sluice_schema.version` holds how many migrations a
// database has had; at start the missing ones run in order inside one transaction that holds an
// advisory lock, so instances starting at once wait for each other and each step runs once.
// The tables mirror the SQLite store's (store/migrations.ts), with what Postgres does better:
// a chat's rounds are numbered per chat (the chat row's lock orders concurrent appends), and
// usage points are `numeric`, so the usage report's sums are exact like SQLite's compensated sum().
// Variables are JSON text, as in SQLite (jsonb would reorder their keys).
import type pg from "pg";

/** Append only: a released migration is never edited, a change is a new entry. */
export const PG_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE chats (
    id         bigint GENERATED ALWAYS AS IDENTITY,
    app_id     text   NOT NULL,
    chat_id    text   NOT NULL,
    share_id   text,
    uid        text,
    title      text   NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    rounds     bigint NOT NULL,
    variables  text,
    PRIMARY KEY (app_id, chat_id)
  );
  CREATE INDEX chats_by_owner ON chats (share_id, uid, updated_at) WHERE share_id IS NOT NULL;

  CREATE TABLE rounds (
    app_id     text   NOT NULL,
    chat_id    text   NOT NULL,
    seq        bigint NOT NULL,
    user_turn  text   NOT NULL,
    assistant_turn text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (app_id, chat_id, seq)
  );

  CREATE TABLE usage (
    id            bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time          bigint  NOT NULL,
    app_id        text    NOT NULL,
    key_name      text,
    share_id      text,
    model         text    NOT NULL,
    channel       text    NOT NULL,
    input_tokens  bigint  NOT NULL,
    output_tokens bigint  NOT NULL,
    points        numeric NOT NULL,
    status        integer NOT NULL,
    duration_ms   bigint  NOT NULL,
    chat_id       text
  );
  CREATE INDEX usage_by_time ON usage (time);
  CREATE INDEX usage_by_app_time ON usage (app_id, time);

  CREATE TABLE spend (
    scope  text PRIMARY KEY,
    points double precision NOT NULL DEFAULT 0
  );

  CREATE TABLE api_keys (
    name             text             PRIMARY KEY,
    kind             text             NOT NULL CHECK (kind IN ('app', 'global')),
    app_id           text,
    sha256           text             NOT NULL UNIQUE,
    max_usage_points double precision NOT NULL,
    qpm              integer          NOT NULL,
    created_at       bigint           NOT NULL,
    revoked_at       bigint
  );
  CREATE TABLE key_activity (
    name         text   PRIMARY KEY,
    last_used_at bigint NOT NULL
  );
  `,
  // 2: as SQLite's version 6: a chat's creator (key_name beside share_id/uid; chats made through app
  //    keys before have neither and stay owned by nobody in particular, docs/store.md#chat-ownership;
  //    a chat opened before its first round has rounds = 0 and is not listed), why each answer
  //    ended, the uids of share-link tokens by digest, and Responses API responses.
  `
  ALTER TABLE chats ADD COLUMN key_name text;
  ALTER TABLE usage ADD COLUMN finish_reason text;

  CREATE TABLE share_uids (
    share_id     text   NOT NULL,
    token_digest text   NOT NULL,
    uid          text   NOT NULL,
    at           bigint NOT NULL,
    PRIMARY KEY (share_id, token_digest)
  );
  CREATE INDEX share_uids_by_at ON share_uids (at);

  CREATE TABLE responses (
    app_id      text   NOT NULL,
    id          text   NOT NULL,
    key_name    text,
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL,
    previous_id text,
    input       text   NOT NULL,
    output      text   NOT NULL,
    PRIMARY KEY (app_id, id)
  );
  CREATE INDEX responses_by_expiry ON responses (expires_at);
  `,
  // issue 27: as SQLite's: a stored response's UTF-8 bytes (its app's quota, docs/store.md#responses),
  //    counted now for the rows kept before; the responses continued from one, found by index
  //    (deleted with it); an app's live responses summed from an index.
  `
  ALTER TABLE responses ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
  UPDATE responses SET bytes = octet_length(input) + octet_length(output);
  CREATE INDEX responses_by_previous ON responses (app_id, previous_id);
  CREATE INDEX responses_by_app ON responses (app_id, expires_at) INCLUDE (bytes);
  `,
  // issue 32: channel records for FastGPT's AI Proxy API (docs/fastgpt.md#channels): a number per
  //           channel, its status, and what the API wrote over config.json's channel; and what its
  //           call logs show of a usage row (docs/fastgpt.md#call-logs)
  `
  CREATE TABLE channel_records (
    id         bigint  PRIMARY KEY,
    ref        text    NOT NULL UNIQUE,
    record     text,
    deleted    boolean NOT NULL DEFAULT false,
    status     integer NOT NULL DEFAULT 1,
    created_at bigint  NOT NULL
  );

  CREATE TABLE usage_bodies (
    request_id         text    NOT NULL,
    time               bigint  NOT NULL,
    request            text    NOT NULL,
    response           text    NOT NULL,
    request_truncated  boolean NOT NULL,
    response_truncated boolean NOT NULL,
    expires_at         bigint  NOT NULL,
    -- time first: rows arrive in time order, so a write appends to the key instead of landing anywhere in it
    PRIMARY KEY (time, request_id)
  );
  CREATE INDEX usage_bodies_by_expiry ON usage_bodies (expires_at);

  ALTER TABLE usage ADD COLUMN request_id text, ADD COLUMN endpoint text, ADD COLUMN channel_id bigint,
    ADD COLUMN attempts integer, ADD COLUMN ttfb_ms bigint, ADD COLUMN error text;
  `,
  // issue 29: usage rows keep the prompt tokens the upstream served from its prefix cache
  //    (docs/routing.md#cached-tokens); rows written before have 0
  `
  ALTER TABLE usage ADD COLUMN cached_tokens bigint NOT NULL DEFAULT 0;
  `,
  // issue 31: quotas by time (docs/configuration.md#quotas-by-time): created keys carry tokens per
  //    minute, a period budget and an expiry; usage rows name the end user (docs/api.md#usage)
  `
  ALTER TABLE api_keys ADD COLUMN tpm integer NOT NULL DEFAULT 0;
  ALTER TABLE api_keys ADD COLUMN period_points double precision NOT NULL DEFAULT -1;
  ALTER TABLE api_keys ADD COLUMN period text NOT NULL DEFAULT 'day';
  ALTER TABLE api_keys ADD COLUMN expires_at bigint;
  ALTER TABLE usage ADD COLUMN "user" text;
  `,
  // issue 32: kept bodies are purged in the order of their key, which begins with their time
  //    (docs/fastgpt.md#bodies): an index by expiry is one more to write with every row, for nothing
  `
  DROP INDEX IF EXISTS usage_bodies_by_expiry;
  `,
  // issue 36: a share-link user's uid in a usage row may be the localId that opens their chats: every
  //    share-link row's user is rewritten as its digest (docs/store.md#share-link-users-in-usage-rows),
  //    the one src/store/share-user.ts makes: sha256 is built in since PostgreSQL 11
  `
  UPDATE usage SET "user" = 'sha256:' || left(encode(sha256(convert_to('sluice share user|' || share_id || '|' || "user", 'UTF8')), 'hex'), 32)
  WHERE share_id IS NOT NULL AND "user" IS NOT NULL;
  `,
  // issue 36: kept bodies are keyed by an id Sluice makes, not the client's x-request-id, which
  //    many calls may share (docs/fastgpt.md#bodies); bodies kept before stay keyed by request id
  `
  ALTER TABLE usage ADD COLUMN bodies_key text;
  ALTER TABLE usage_bodies RENAME COLUMN request_id TO bodies_key;
  `,
  // issue 40: as SQLite's batch tables (docs/batches.md#durability); a file's bytes are kept in the
  //    database, so every instance reads them
  `
  CREATE TABLE batch_files (
    id         text   PRIMARY KEY,
    app_id     text   NOT NULL,
    key_name   text,
    purpose    text   NOT NULL,
    filename   text   NOT NULL,
    bytes      bigint NOT NULL,
    created_at bigint NOT NULL,
    content    bytea
  );
  CREATE INDEX batch_files_by_app ON batch_files (app_id, created_at, id);

  CREATE TABLE batches (
    id         text   PRIMARY KEY,
    app_id     text   NOT NULL,
    key_name   text   NOT NULL,
    status     text   NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    object     text   NOT NULL
  );
  CREATE INDEX batches_by_app ON batches (app_id, created_at, id);
  CREATE INDEX batches_by_status ON batches (status);

  CREATE TABLE batch_lines (
    batch_id    text    NOT NULL,
    line        integer NOT NULL,
    custom_id   text    NOT NULL,
    model       text    NOT NULL,
    digest      text    NOT NULL,
    body        text    NOT NULL,
    state       text    NOT NULL,
    owner       text,
    lease_until bigint  NOT NULL DEFAULT 0,
    output      text,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, line)
  );
  CREATE INDEX batch_lines_to_claim ON batch_lines (state, model, digest) WHERE state IN ('pending', 'running');
  `,
  // issue 40: a batch line's usage row names its batch and line (docs/batches.md#how-lines-run)
  `
  ALTER TABLE usage ADD COLUMN batch_id text;
  ALTER TABLE usage ADD COLUMN custom_id text;
  `,
];

/** Any constant: the advisory lock every Sluice instance takes around its migration. */
const MIGRATION_LOCK = 7_305_511_830;
/** Waiting for another instance's migration, and running one, may take long. */
const MIGRATION_TIMEOUT_MS = 10 * 60_000;

type TimedQuery = pg.QueryConfig & { query_timeout: number };
const long = (text: string): TimedQuery => ({ text, query_timeout: MIGRATION_TIMEOUT_MS });

/** The database cannot be used by this build (made by a newer one). */
export class SchemaError extends Error {}

/** Brings the database to the latest schema version; refuses a database made by a newer build. */
export async function migratePostgres(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  const ignore = () => {}; // a connection lost between statements: the next one fails instead
  client.on("error", ignore);
  try {
    await client.query("BEGIN");
    await client.query(long(`SET LOCAL statement_timeout = ${MIGRATION_TIMEOUT_MS}`));
    // held until COMMIT: a second instance waits here, then finds the schema current
    await client.query(long(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`));
    await client.query("CREATE TABLE IF NOT EXISTS sluice_schema (version integer NOT NULL)");
    const { rows } = await client.query<{ version: number }>("SELECT version FROM sluice_schema");
    const current = rows[0]?.version ?? 0;
    if (current > PG_MIGRATIONS.length) {
      throw new SchemaError(`the database has schema version ${current}; this build knows up to ${PG_MIGRATIONS.length}`);
    }
    for (const step of PG_MIGRATIONS.slice(current)) await client.query(long(step));
    if (rows.length === 0) await client.query("INSERT INTO sluice_schema (version) VALUES ($1)", [PG_MIGRATIONS.length]);
    else if (current < PG_MIGRATIONS.length) await client.query("UPDATE sluice_schema SET version = $1", [PG_MIGRATIONS.length]);
    await client.query("COMMIT");
    client.off("error", ignore);
    client.release();
  } catch (err) {
    // the connection may be broken or mid-transaction: never hand it back to the pool
    client.release(err instanceof Error ? err : true);
    throw err;
  }
}
