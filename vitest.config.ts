import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Network tests each start their own servers on random loopback ports; files run in parallel.
    pool: "forks",
    // dist/ built once, before any file: the signal, log and start tests run the built gateway
    globalSetup: ["test/support/global-build.ts"],
  },
});
