// Group commit: writes issued within two turns of the event loop share one SQLite transaction. Every caller's promise
// resolves only after the commit, with what its write returned, so "answered" still means "on disk"
// (WAL), with one commit per batch. Should a batch fail, each of its writes is retried in a transaction of its own, so one bad
// write fails alone. Writes of one kind that combine (usage rows, spend counters) can be gathered by
// their jobs and made once per batch, just before its commit.
import type Database from "better-sqlite3";

type Write = (...args: unknown[]) => unknown;
type Committed = (result: unknown, ...args: unknown[]) => void;

interface Job {
  write: Write;
  args: unknown[];
  /** what `write` returned in the transaction that committed */
  result?: unknown;
  /** runs synchronously right after the commit, before any caller resumes */
  committed: Committed | undefined;
  resolve: (result: unknown) => void;
  reject: (err: unknown) => void;
}

/** What a batch's jobs gathered, made in one go inside the batch's transaction. */
export interface Gathered {
  /** makes the writes gathered so far, then forgets them */
  flush(): void;
  /** forgets them: their transaction failed */
  clear(): void;
}

// A turn that receives answers issues their writes; waiting one more turn lets the answers of the
// next one join: under load batches grow by about half (a commit costs ~50 µs however few rows it
// holds), for one turn of latency (microseconds when idle).
const TURNS = 2;

/** A batched write: `write` runs in a batch's transaction (again in one of its own should the batch
 *  fail); its promise resolves with what it returned once that committed, right after `committed`. */
export type Batched = <A extends unknown[], R = void>(
  write: (...args: A) => R,
  committed?: (result: R, ...args: A) => void,
) => (...args: A) => Promise<R>;

export function createWriteBatcher(db: Database.Database, gathered: Gathered[] = []): Batched {
  let queue: Job[] = [];
  let scheduled = false;
  let turn = 0;

  const commit = db.transaction((jobs: Job[]) => {
    for (const job of jobs) job.result = job.write(...job.args);
    for (const g of gathered) g.flush();
  });

  function settle(jobs: Job[]): void {
    try {
      // immediate: take the write lock up front so another process cannot make the commit fail
      commit.immediate(jobs);
    } catch (err) {
      for (const g of gathered) g.clear();
      if (jobs.length > 1) for (const job of jobs) settle([job]);
      else jobs[0]!.reject(err);
      return;
    }
    for (const job of jobs) {
      job.committed?.(job.result, ...job.args);
      job.resolve(job.result);
    }
  }

  function flush(): void {
    if (++turn < TURNS) return void setImmediate(flush);
    turn = 0;
    scheduled = false;
    const jobs = queue;
    queue = [];
    settle(jobs);
  }

  return (write, committed) => {
    return (...args) =>
      new Promise((resolve, reject) => {
        queue.push({ write: write as Write, args, committed: committed as Committed | undefined, resolve: resolve as (r: unknown) => void, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
  };
}
