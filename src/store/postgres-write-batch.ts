// Group commit for the PostgreSQL store, as store/write-batch.ts is for SQLite: writes queued while a
// batch is in flight go to the database together, in one transaction (postgres-pool.ts: statements
// pipelined, COMMIT sent only once all their results are back, so a batch given up on is never
// committed later). Rows contended by every request (the spend counters) are then locked once per
// batch, not once per request, each lock held for one commit. Every caller's promise settles only
// after its batch's COMMIT returned. Should the server refuse a batch, its writes are redone one by
// one, so a bad write fails alone.
import { failedByItsWrites, type PgPool, type PgWrite } from "./postgres-pool.js";

/** a bound on one transaction's size: the rest waits for the next batch */
const MAX_BATCH = 512;

interface Job<T> {
  item: T;
  resolve: (answer: unknown) => void;
  reject: (err: unknown) => void;
}

/** A batch's statements, in the order they are to run, and what each item answers from their rows. */
export interface PgBatchPlan {
  writes: PgWrite[];
  /** one answer per item, in their order; absent: every item answers undefined */
  answers?: (rows: unknown[][]) => unknown[];
}

export interface PgWriteBatcher<T> {
  /** Resolves with the item's answer once its batch committed; rejects as its transaction failed. */
  write(item: T): Promise<unknown>;
  /** Resolves once every item written so far has settled. */
  settled(): Promise<void>;
}

/** `plan` makes a batch's statements from its items. */
export function createPgWriteBatcher<T>(db: PgPool, plan: (items: T[]) => PgBatchPlan): PgWriteBatcher<T> {
  let queue: Job<T>[] = [];
  // one batch in flight: the next one gathers meanwhile; jobs settle in the order they came
  let busy = false;
  let last: Promise<void> = Promise.resolve();

  async function commit(jobs: Job<T>[]): Promise<void> {
    const { writes, answers } = plan(jobs.map((job) => job.item));
    const rows = await db.writeAll(writes);
    const answered = answers?.(rows);
    jobs.forEach((job, i) => job.resolve(answered?.[i]));
  }

  async function settle(jobs: Job<T>[]): Promise<void> {
    try {
      return await commit(jobs);
    } catch (err) {
      if (jobs.length === 1 || !failedByItsWrites(err)) return jobs.forEach((job) => job.reject(err));
    }
    for (const [i, job] of jobs.entries()) {
      try {
        await commit([job]);
      } catch (err) {
        job.reject(err);
        // the server stopped answering: the writes left would each wait for it in turn
        if (!failedByItsWrites(err)) return jobs.slice(i + 1).forEach((rest) => rest.reject(err));
      }
    }
  }

  async function run(): Promise<void> {
    while (queue.length > 0) {
      const jobs = queue.length <= MAX_BATCH ? queue : queue.slice(0, MAX_BATCH);
      queue = queue.length <= MAX_BATCH ? [] : queue.slice(MAX_BATCH);
      await settle(jobs);
      // the callers just answered may write again within this turn: let them join the next batch
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    busy = false;
  }

  return {
    write(item) {
      const written = new Promise<unknown>((resolve, reject) => queue.push({ item, resolve, reject }));
      if (!busy) {
        busy = true;
        // the writes issued in this turn of the event loop make the first batch
        setImmediate(() => void run());
      }
      last = written.then(() => {}, () => {});
      return written;
    },
    settled: () => last,
  };
}
