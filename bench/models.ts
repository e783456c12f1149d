// The models the benchmark asks for. The test upstream (bench/upstream-process.ts) reads the model
// name of each request to decide how to answer, and Sluice's bench config (bench/sluice-process.ts)
// declares each one, so the two can never disagree.

export const MODELS = {
  /** 32k context; non-stream answers and 20-chunk streams, each chunk its own socket write */
  chat: "bench-model",
  /** 100 chunks 2 ms apart: what a model on a GPU looks like to a proxy */
  realistic: "bench-realistic",
  /** the first chunk, then nothing until the client goes away (open-stream memory) */
  hold: "bench-hold",
  /** 256k context, for the request bodies of the per-KB case (the byte bound proves they fit) */
  large: "bench-large",
  /** two healthy channels (the baseline of the failover case) */
  pair: "bench-pair",
  /** two channels, one of which fails every 5th attempt before its headers */
  flaky: "bench-flaky",
  /** an embedding model (`vectorModels`), when the gateway knows them */
  embed: "bench-embed",
} as const;

export const STREAM_CHUNKS = 20;
export const REALISTIC_CHUNKS = 100;
export const REALISTIC_CHUNK_GAP_MS = 2;
/** The failing channel's upstream answers every FLAKY_EVERY-th attempt 500 (20 %): deterministic,
 *  so the breaker (5 consecutive failures) never opens and every failure is a failover. */
export const FLAKY_EVERY = 5;
/** The failing channel's base URL is the upstream's with this path in front. */
export const FLAKY_PREFIX = "/flaky";
export const EMBEDDING_DIMENSIONS = 1024;
