// Budget reservations and rate windows at admission (docs/api.md#budgets) with the in-process cluster
// state: the contract every implementation meets (test/support/cluster-contract.ts; the Redis
// implementation runs it in test/cluster-redis.test.ts).
import { createMemoryClusterState } from "../src/cluster/memory.js";
import { describeClusterContract } from "./support/cluster-contract.js";

describeClusterContract("in-process", async () => createMemoryClusterState({ failures: 5, cooldownMs: 30_000 }));
