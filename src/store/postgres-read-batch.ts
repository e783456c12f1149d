// Group reads for the PostgreSQL store, as postgres-write-batch.ts groups writes: the reads asked for
// while one is in flight go to the database together, as one statement. A statement costs a round
// trip and a wake-up of a server process whatever it reads; reads that share one pay them once.
// Each caller still gets only its own answer; a statement that fails fails every read in it and
// those waiting for it.

/** a bound on one statement's keys: the rest waits for the next one */
const MAX_BATCH = 256;

interface Job<K, R> {
  key: K;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

/** `readAll` answers a batch's keys, one answer per key in their order. */
export function createPgReadBatcher<K, R>(readAll: (keys: K[]) => Promise<R[]>): (key: K) => Promise<R> {
  let queue: Job<K, R>[] = [];
  // one statement in flight: the next batch gathers meanwhile
  let busy = false;

  async function run(): Promise<void> {
    while (queue.length > 0) {
      const jobs = queue.slice(0, MAX_BATCH);
      queue = queue.slice(MAX_BATCH);
      try {
        const answers = await readAll(jobs.map((job) => job.key));
        jobs.forEach((job, i) => job.resolve(answers[i]!));
      } catch (err) {
        // the reads that waited meanwhile would each wait for the server again (a stalled server
        // is given up on only after the timeouts): they fail with this one
        const waited = queue;
        queue = [];
        [...jobs, ...waited].forEach((job) => job.reject(err));
      }
    }
    busy = false;
  }

  return (key) => {
    const read = new Promise<R>((resolve, reject) => queue.push({ key, resolve, reject }));
    if (!busy) {
      busy = true;
      // the reads asked for in this turn of the event loop make the first batch
      setImmediate(() => void run());
    }
    return read;
  };
}
