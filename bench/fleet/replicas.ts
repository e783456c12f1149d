// Starts simulated replicas (bench/fleet/replica.ts), each in its own process, for the bench's
// fleet section and the tests: resolves once a replica printed `READY <port>`; never leaves one
// running when the parent exits.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface ReplicaOptions {
  name: string;
  maxRunning?: number;
  blockSize?: number;
  cacheBlocks?: number;
  maxBatchedTokens?: number;
  prefillUsPerToken?: number;
  decodeMsPerToken?: number;
  slow?: number;
  schedulingPolicy?: "fcfs" | "priority";
}

export interface ReplicaStats {
  name: string;
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  generationTokens: number;
  running: number;
  waiting: number;
}

export interface Replica {
  name: string;
  /** http://127.0.0.1:port, the base URL a channel is configured with */
  url: string;
  stats(): Promise<ReplicaStats>;
  stop(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL("./replica.ts", import.meta.url));
const FLAGS: Record<Exclude<keyof ReplicaOptions, "name">, string> = {
  maxRunning: "--max-running",
  blockSize: "--block-size",
  cacheBlocks: "--cache-blocks",
  maxBatchedTokens: "--max-batched-tokens",
  prefillUsPerToken: "--prefill-us-per-token",
  decodeMsPerToken: "--decode-ms-per-token",
  slow: "--slow",
  schedulingPolicy: "--scheduling-policy",
};
const children = new Set<ChildProcess>();
process.once("exit", () => children.forEach((child) => child.kill("SIGKILL")));

export async function startReplica(o: ReplicaOptions): Promise<Replica> {
  const args = ["--import", "tsx", SCRIPT, "--port", "0", "--name", o.name];
  for (const [key, flag] of Object.entries(FLAGS)) {
    const value = o[key as keyof typeof FLAGS];
    if (value !== undefined) args.push(flag, String(value));
  }
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exited.then(() => children.delete(child));
  let output = "";
  const port = await new Promise<number>((resolve, reject) => {
    const read = (data: Buffer) => {
      output += data.toString();
      const ready = /READY (\d+)/.exec(output);
      if (ready) resolve(Number(ready[1]));
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("error", reject);
    void exited.then(() => reject(new Error(`replica ${o.name} exited before it was ready:\n${output}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    name: o.name,
    url,
    async stats() {
      return (await (await fetch(`${url}/stats`)).json()) as ReplicaStats;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

export function startReplicas(count: number, o: Omit<ReplicaOptions, "name"> & { slowOne?: number }): Promise<Replica[]> {
  const { slowOne, ...rest } = o;
  return Promise.all(Array.from({ length: count }, (_, i) => startReplica({ ...rest, name: `r${i + 1}`, slow: i === 0 && slowOne ? slowOne : rest.slow })));
}
