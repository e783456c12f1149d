// Group commit: writes issued in the same tick share one SQLite transaction, each in a savepoint
// of its own, so one failing write does not undo the others. Every caller's promise resolves only
// after the commit, so "answered" still means "on disk" (WAL) — just with one commit per batch.
import type Database from "better-sqlite3";

interface Job {
  run: () => void;
  /** runs synchronously right after the commit, before any caller resumes */
  committed?: () => void;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export type Batched = <A extends unknown[]>(write: (...args: A) => void, committed?: (...args: A) => void) => (...args: A) => Promise<void>;

export function createWriteBatcher(db: Database.Database): Batched {
  let queue: Job[] = [];
  let scheduled = false;

  const commit = db.transaction((jobs: Job[]) => {
    const failed = new Map<Job, unknown>();
    for (const job of jobs) {
      try {
        job.run();
      } catch (err) {
        failed.set(job, err);
      }
    }
    return failed;
  });

  function flush(): void {
    scheduled = false;
    const jobs = queue;
    queue = [];
    let failed: Map<Job, unknown>;
    try {
      // immediate: take the write lock up front so another process cannot make the commit fail
      failed = commit.immediate(jobs);
    } catch (err) {
      for (const job of jobs) job.reject(err);
      return;
    }
    for (const job of jobs) {
      if (failed.has(job)) job.reject(failed.get(job));
      else {
        job.committed?.();
        job.resolve();
      }
    }
  }

  return (write, committed) => {
    // nested in the batch's transaction, a better-sqlite3 transaction function is a savepoint
    const inSavepoint = db.transaction(write);
    return (...args) =>
      new Promise<void>((resolve, reject) => {
        queue.push({ run: () => inSavepoint(...args), committed: committed && (() => committed(...args)), resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
  };
}
