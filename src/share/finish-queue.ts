// A bounded fire-and-forget work queue for the finish callbacks: at most `max` jobs held (waiting
// or running) and at most `concurrency` running, so a slow operator costs memory that is capped.

export interface WorkQueue<T> {
  /** Holds the job and starts it when a slot frees; false (job refused) when `max` jobs are held. */
  offer(job: T): boolean;
  /** Resolves once no job is waiting or running. */
  drain(): Promise<void>;
  /** Forgets the jobs not started yet and returns how many there were. */
  clear(): number;
}

export function createWorkQueue<T>(
  run: (job: T) => Promise<void>,
  opts: { max: number; concurrency: number },
): WorkQueue<T> {
  const waiting: T[] = [];
  let running = 0;
  let idleWaiters: Array<() => void> = [];

  const isIdle = () => running === 0 && waiting.length === 0;
  const settle = () => {
    if (!isIdle()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    waiters.forEach((resolve) => resolve());
  };
  const pump = () => {
    while (running < opts.concurrency && waiting.length > 0) {
      const job = waiting.shift() as T;
      running++;
      run(job)
        .catch(() => {}) // `run` reports its own failures; the queue only keeps going
        .finally(() => {
          running--;
          pump();
          settle();
        });
    }
  };

  return {
    offer(job) {
      if (running + waiting.length >= opts.max) return false;
      waiting.push(job);
      pump();
      return true;
    },
    drain() {
      return isIdle() ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve));
    },
    clear() {
      const dropped = waiting.length;
      waiting.length = 0;
      settle();
      return dropped;
    },
  };
}
