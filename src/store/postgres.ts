// The PostgreSQL Store (docs/store.md#postgresql): what the SQLite store keeps, in a database several gateway
// instances share. Rounds, usage rows and responses are written by group commit
// (postgres-write-batch.ts): the writes of a batch in one transaction committed once its
// statements' results are back (postgres-pool.ts): a round and its chat, a usage row and its spend
// counters are written whole or not at all, and a write the store gave up on (503) is never
// committed when the server wakes up. Each statement costs a round trip and a wake-up of a server
// process, more than the rows it reads or writes: a batch's rounds go in one statement (per writer
// of a chat), and a chatId's owner check, chat and last rounds come in one, shared by the chatId
// reads made while one is in flight (postgres-read-batch.ts).
//
// No history cache here, unlike SQLite's: another instance may append to a chat at any time, and
// checking a cached history for staleness costs the same round trip as reading the chat's last
// rounds through their primary key, so every read goes to the database.
import { createPgBatchStore } from "./postgres-batches.js";
import { createPgChatOps, planCreates, planRounds, type RoundWrite } from "./postgres-chats.js";
import { createPgChannelOps } from "./postgres-channels.js";
import { createPgKeyOps } from "./postgres-keys.js";
import { createPgLogOps } from "./postgres-logs.js";
import { createPgPool, type PgWrite } from "./postgres-pool.js";
import { createPgRecordOps, responsesWrites, type ResponseWrite } from "./postgres-records.js";
import { createPgUsageOps, usageWrite, type UsageWrite } from "./postgres-usage.js";
import { createPgWriteBatcher, type PgBatchPlan } from "./postgres-write-batch.js";
import type { Store } from "./types.js";

/** A write that waits for the next batch. */
type BatchedWrite = RoundWrite | UsageWrite | ResponseWrite;

export function createPostgresStore(url: string): Store {
  const db = createPgPool(url);
  const writes = createPgWriteBatcher(db, planBatch);
  // chats opened before their first round: rare, in transactions of their own
  const creates = createPgWriteBatcher(db, planCreates);
  const { bodiesSettled, ...logs } = createPgLogOps(db);
  return {
    ...createPgChatOps(db, writes.write, creates.write),
    ...createPgUsageOps(db, writes.write),
    ...createPgKeyOps(db),
    ...createPgChannelOps(db),
    ...logs,
    ...createPgRecordOps(db, writes.write),
    batches: createPgBatchStore(db),
    ping: () => db.ping(),
    async close() {
      await Promise.all([writes.settled(), creates.settled(), bodiesSettled()]);
      await db.close();
    },
  };
}

/** One batch's statements. Rows are locked in one order by every instance, so two batches never wait
 *  for each other in a cycle: chats by (app, chat) (a chat's rounds keep the order they came in),
 *  then responses by (app, id), then the spend counters by scope. */
function planBatch(batch: BatchedWrite[]): PgBatchPlan {
  const rounds = planRounds(batch.filter((w) => w.kind === "round"));
  const writes: PgWrite[] = [...rounds.writes];
  const responses = batch.filter((w) => w.kind === "response");
  if (responses.length > 0) writes.push(...responsesWrites(responses));
  const usage = batch.filter((w) => w.kind === "usage");
  if (usage.length > 0) writes.push(usageWrite(usage));
  return {
    writes,
    answers(rows) {
      const written = rounds.written(rows.slice(0, rounds.writes.length));
      return batch.map((w) => (w.kind === "round" ? written.has(w) : undefined));
    },
  };
}
