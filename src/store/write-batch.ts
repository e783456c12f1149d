// Group commit: writes issued in the same tick share one SQLite transaction. Every caller's promise
// resolves only after the commit, so "answered" still means "on disk" (WAL), with one commit per
// batch. Should a batch fail, each of its writes is retried in a transaction of its own, so one bad
// write fails alone.
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
    for (const job of jobs) job.run();
  });

  function settle(jobs: Job[]): void {
    try {
      // immediate: take the write lock up front so another process cannot make the commit fail
      commit.immediate(jobs);
    } catch (err) {
      if (jobs.length > 1) for (const job of jobs) settle([job]);
      else jobs[0]!.reject(err);
      return;
    }
    for (const job of jobs) {
      job.committed?.();
      job.resolve();
    }
  }

  function flush(): void {
    scheduled = false;
    const jobs = queue;
    queue = [];
    settle(jobs);
  }

  return (write, committed) => {
    return (...args) =>
      new Promise<void>((resolve, reject) => {
        queue.push({ run: () => write(...args), committed: committed && (() => committed(...args)), resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
  };
}
