import { defineConfig } from "vitest/config";

/** Files that measure how the gateway holds up (latency ceilings): they run alone, after the rest. */
const ALONE = ["test/abuse.test.ts", "test/tokens-latency.test.ts", "test/body-pieces.test.ts", "test/engine-metrics-lag.test.ts", "test/audio-refusal.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Network tests each start their own servers on random loopback ports; files run in parallel.
    pool: "forks",
    // dist/ built once, before any file: the signal, log and start tests run the built gateway
    globalSetup: ["test/support/global-build.ts"],
    projects: [
      { extends: true, test: { name: "suite", include: ["test/**/*.test.ts"], exclude: ALONE } },
      // a later group: its files start once every file of the suite has finished, one at a time
      // (two latency ceilings measured at once on two cores measure each other)
      { extends: true, test: { name: "alone", include: ALONE, sequence: { groupOrder: 1 }, fileParallelism: false } },
    ],
  },
});
