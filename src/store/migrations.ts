// The SQLite schema and its versions. `PRAGMA user_version` holds how many migrations a database
// has had; at open, the missing ones run in order inside one transaction.
import type Database from "better-sqlite3";
import { shareUserDigest } from "./share-user.js";

/** Append only: a released migration is never edited, a change is a new entry. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE chats (
    app_id     TEXT    NOT NULL,
    chat_id    TEXT    NOT NULL,
    share_id   TEXT,
    uid        TEXT,
    title      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, chat_id)
  );
  CREATE INDEX chats_by_owner ON chats (share_id, uid, updated_at);

  CREATE TABLE messages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id     TEXT    NOT NULL,
    chat_id    TEXT    NOT NULL,
    role       TEXT    NOT NULL CHECK (role IN ('user', 'assistant')),
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE INDEX messages_by_chat ON messages (app_id, chat_id, id);

  CREATE TABLE usage (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    time          INTEGER NOT NULL,
    app_id        TEXT    NOT NULL,
    key_name      TEXT,
    share_id      TEXT,
    model         TEXT    NOT NULL,
    channel       TEXT    NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    points        REAL    NOT NULL,
    status        INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    chat_id       TEXT
  );
  CREATE INDEX usage_by_time ON usage (time);
  CREATE INDEX usage_by_app_time ON usage (app_id, time);

  CREATE TABLE spend (
    scope  TEXT PRIMARY KEY,
    points REAL NOT NULL DEFAULT 0
  );
  `,
  // 2: only share-link chats are listed by owner; API chats need not update that index every round
  `
  DROP INDEX chats_by_owner;
  CREATE INDEX chats_by_owner ON chats (share_id, uid, updated_at) WHERE share_id IS NOT NULL;
  `,
  // 3: a chat's history is a chain of rounds, newest first from chats.last_round_id. A new round is
  //    appended at the end of one table instead of into an index ordered by chat, whose scattered
  //    pages every commit wrote out again; a trigger links it and moves the chat's pointer, so the
  //    chain cannot be left half-updated. Messages move over in order: a user turn and the
  //    assistant turn after it make one round; any other message is a round with one side.
  `
  CREATE TABLE rounds (
    id         INTEGER PRIMARY KEY,
    prev_id    INTEGER,
    app_id     TEXT    NOT NULL,
    chat_id    TEXT    NOT NULL,
    user       TEXT,
    assistant  TEXT,
    created_at INTEGER NOT NULL
  );
  ALTER TABLE chats ADD COLUMN last_round_id INTEGER;

  INSERT INTO rounds (id, prev_id, app_id, chat_id, user, assistant, created_at)
  SELECT id, LAG(id) OVER (PARTITION BY app_id, chat_id ORDER BY id), app_id, chat_id, user, assistant, created_at
  FROM (
    SELECT id, app_id, chat_id, created_at,
      CASE WHEN role = 'user' THEN content END AS user,
      CASE WHEN role = 'assistant' THEN content WHEN next_role = 'assistant' THEN next_content END AS assistant,
      role = 'assistant' AND prev_role IS 'user' AS answers_previous
    FROM (
      SELECT *, LAG(role) OVER w AS prev_role, LEAD(role) OVER w AS next_role, LEAD(content) OVER w AS next_content
      FROM messages WINDOW w AS (PARTITION BY app_id, chat_id ORDER BY id)
    )
  )
  WHERE NOT answers_previous;

  UPDATE chats SET last_round_id = newest.id
  FROM (SELECT app_id, chat_id, MAX(id) AS id FROM rounds GROUP BY app_id, chat_id) AS newest
  WHERE newest.app_id = chats.app_id AND newest.chat_id = chats.chat_id;

  DROP TABLE messages;

  CREATE TRIGGER rounds_link AFTER INSERT ON rounds BEGIN
    UPDATE chats SET last_round_id = NEW.id, updated_at = max(updated_at, NEW.created_at)
    WHERE app_id = NEW.app_id AND chat_id = NEW.chat_id;
  END;
  `,
  // 4: keys created through the operations API, held as sha256 digests (never the key); a revoked
  //    key keeps its row, so its name (and spend scope) is never given to another key. key_activity
  //    holds lastUsedAt of every key, config keys included.
  `
  CREATE TABLE api_keys (
    name             TEXT    PRIMARY KEY,
    kind             TEXT    NOT NULL CHECK (kind IN ('app', 'global')),
    app_id           TEXT,
    sha256           TEXT    NOT NULL UNIQUE,
    max_usage_points REAL    NOT NULL,
    qpm              INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    revoked_at       INTEGER
  );
  CREATE TABLE key_activity (
    name         TEXT    PRIMARY KEY,
    last_used_at INTEGER NOT NULL
  );
  `,
  // 5: a chat's FastGPT variables (docs/api.md#variables), a JSON object merged with each request's;
  //    NULL for chats that never had any
  `
  ALTER TABLE chats ADD COLUMN variables TEXT;
  `,
  // 6: a chat records its creator: share_id/uid (share-link users, as before) or key_name (an app
  //    key). Chats made through app keys before this version have neither: they stay owned by
  //    nobody in particular, which any key of their app may use, as before (docs/store.md#chat-ownership).
  //    A chat opened before its first round has no last_round_id and is not listed.
  //    Usage rows say why the answer ended. share_uids: the uid a share link's init callback gave
  //    for a token, by the token's digest. responses: Responses API responses kept until expires_at.
  `
  ALTER TABLE chats ADD COLUMN key_name TEXT;
  ALTER TABLE usage ADD COLUMN finish_reason TEXT;

  CREATE TABLE share_uids (
    share_id     TEXT    NOT NULL,
    token_digest TEXT    NOT NULL,
    uid          TEXT    NOT NULL,
    at           INTEGER NOT NULL,
    PRIMARY KEY (share_id, token_digest)
  );
  CREATE INDEX share_uids_by_at ON share_uids (at);

  CREATE TABLE responses (
    app_id      TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    key_name    TEXT,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    previous_id TEXT,
    input       TEXT    NOT NULL,
    output      TEXT    NOT NULL,
    PRIMARY KEY (app_id, id)
  );
  CREATE INDEX responses_by_expiry ON responses (expires_at);
  `,
  // issue 27: a stored response's UTF-8 bytes, for its app's quota (docs/store.md#responses), counted
  //    now for the rows kept before; an index to find the responses continued from one (deleted with
  //    it) and one to sum an app's live responses without reading them.
  `
  ALTER TABLE responses ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
  UPDATE responses SET bytes = length(CAST(input AS BLOB)) + length(CAST(output AS BLOB));
  CREATE INDEX responses_by_previous ON responses (app_id, previous_id);
  CREATE INDEX responses_by_app ON responses (app_id, expires_at, bytes);
  `,
  // issue 32: channel records for FastGPT's AI Proxy API (docs/fastgpt.md#channels): a number per
  //           channel, its status, and what the API wrote over config.json's channel; and what its
  //           call logs show of a usage row (docs/fastgpt.md#call-logs)
  `
  CREATE TABLE channel_records (
    id         INTEGER PRIMARY KEY,
    ref        TEXT    NOT NULL UNIQUE,
    record     TEXT,
    deleted    INTEGER NOT NULL DEFAULT 0,
    status     INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL
  );

  CREATE TABLE usage_bodies (
    request_id         TEXT    NOT NULL,
    time               INTEGER NOT NULL,
    request            TEXT    NOT NULL,
    response           TEXT    NOT NULL,
    request_truncated  INTEGER NOT NULL,
    response_truncated INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    -- time first: rows arrive in time order, so a write appends to the key instead of landing anywhere in it
    PRIMARY KEY (time, request_id)
  );
  CREATE INDEX usage_bodies_by_expiry ON usage_bodies (expires_at);

  ALTER TABLE usage ADD COLUMN request_id TEXT;
  ALTER TABLE usage ADD COLUMN endpoint TEXT;
  ALTER TABLE usage ADD COLUMN channel_id INTEGER;
  ALTER TABLE usage ADD COLUMN attempts INTEGER;
  ALTER TABLE usage ADD COLUMN ttfb_ms INTEGER;
  ALTER TABLE usage ADD COLUMN error TEXT;
  `,
  // issue 29: usage rows keep the prompt tokens the upstream served from its prefix cache
  //    (docs/routing.md#cached-tokens); rows written before have 0
  `
  ALTER TABLE usage ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
  `,
  // issue 31: quotas by time (docs/configuration.md#quotas-by-time): created keys carry tokens per
  //    minute, a period budget and an expiry; usage rows name the end user (docs/api.md#usage)
  `
  ALTER TABLE api_keys ADD COLUMN tpm INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE api_keys ADD COLUMN period_points REAL NOT NULL DEFAULT -1;
  ALTER TABLE api_keys ADD COLUMN period TEXT NOT NULL DEFAULT 'day';
  ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
  ALTER TABLE usage ADD COLUMN user TEXT;
  `,
  // issue 32: kept bodies are purged in the order of their key, which begins with their time
  //    (docs/fastgpt.md#bodies): an index by expiry is one more to write with every row, for nothing
  `
  DROP INDEX IF EXISTS usage_bodies_by_expiry;
  `,
  // issue 36: a share-link user's uid in a usage row may be the localId that opens their chats: every
  //    share-link row's user is rewritten as its digest (docs/store.md#share-link-users-in-usage-rows;
  //    the function is registered by migrate)
  `
  UPDATE usage SET user = sluice_share_user_digest(share_id, user) WHERE share_id IS NOT NULL AND user IS NOT NULL;
  `,
  // issue 36: kept bodies are keyed by an id Sluice makes, not the client's x-request-id, which
  //    many calls may share (docs/fastgpt.md#bodies); bodies kept before stay keyed by request id
  `
  ALTER TABLE usage ADD COLUMN bodies_key TEXT;
  ALTER TABLE usage_bodies RENAME COLUMN request_id TO bodies_key;
  `,
  // issue 40: OpenAI's Files and Batch API (docs/batches.md#durability): files (their bytes on disk
  //    under batches.dir, or in `content` for the memory store), batches, and each line's state, claim
  //    and output
  `
  CREATE TABLE batch_files (
    id         TEXT    PRIMARY KEY,
    app_id     TEXT    NOT NULL,
    key_name   TEXT,
    purpose    TEXT    NOT NULL,
    filename   TEXT    NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    content    BLOB
  );
  CREATE INDEX batch_files_by_app ON batch_files (app_id, created_at, id);

  CREATE TABLE batches (
    id         TEXT    PRIMARY KEY,
    app_id     TEXT    NOT NULL,
    key_name   TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    object     TEXT    NOT NULL
  );
  CREATE INDEX batches_by_app ON batches (app_id, created_at, id);
  CREATE INDEX batches_by_status ON batches (status);

  CREATE TABLE batch_lines (
    batch_id    TEXT    NOT NULL,
    line        INTEGER NOT NULL,
    custom_id   TEXT    NOT NULL,
    model       TEXT    NOT NULL,
    digest      TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    owner       TEXT,
    lease_until INTEGER NOT NULL DEFAULT 0,
    output      TEXT,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, line)
  );
  CREATE INDEX batch_lines_to_claim ON batch_lines (state, model, digest) WHERE state IN ('pending', 'running');
  `,
  // issue 40: a batch line's usage row names its batch and line (docs/batches.md#how-lines-run)
  `
  ALTER TABLE usage ADD COLUMN batch_id TEXT;
  ALTER TABLE usage ADD COLUMN custom_id TEXT;
  `,
];

/** The SQL functions the migrations call: what the issue-36 migration computes, as the gateway does for new rows. */
export function defineMigrationFunctions(db: Database.Database): void {
  db.function("sluice_share_user_digest", { deterministic: true }, (shareId: unknown, uid: unknown) => shareUserDigest(String(shareId), String(uid)));
}

/** Brings the database to the latest schema version; refuses a database made by a newer build. */
export function migrate(db: Database.Database): void {
  defineMigrationFunctions(db);
  const apply = db.transaction(() => {
    const current = db.pragma("user_version", { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new Error(`the database has schema version ${current}; this build knows up to ${MIGRATIONS.length}`);
    }
    for (const step of MIGRATIONS.slice(current)) db.exec(step);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  });
  // immediate: two processes opening a fresh file at once must not both run version 1
  apply.immediate();
}
