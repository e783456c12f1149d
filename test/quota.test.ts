// Budget reservations and rate windows at admission (CONTRACTS §10) with the in-process cluster
// state: the contract every implementation meets (test/support/cluster-contract.ts; the Redis
// implementation runs it in test/cluster-redis.test.ts).
import { createMemoryClusterState } from "../src/cluster/memory.js";
import { describeClusterContract } from "./support/cluster-contract.js";

describeClusterContract("in-process", async () => createMemoryClusterState({ failures: 5, cooldownMs: 30_000 }));
