// A server the tests run as a child process (PostgreSQL, Redis, …): started, then awaited until its
// output shows it is ready; stopped with a signal and awaited until it exited.
import { spawn, type SpawnOptions } from "node:child_process";

export interface ServerProcess {
  pid: number;
  /** Sends `signal` (when still running) and resolves once the process exited. */
  stop(signal: NodeJS.Signals): Promise<void>;
}

/** Spawns `command` and resolves once a line of its stdout or stderr matches `ready`; rejects with
 *  what it printed when it exits first. */
export async function startServerProcess(command: string, args: string[], ready: RegExp, options: SpawnOptions = {}): Promise<ServerProcess> {
  const proc = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const read = (d: Buffer) => {
      log += d.toString();
      if (ready.test(log)) resolve();
    };
    proc.stdout!.on("data", read);
    proc.stderr!.on("data", read);
    proc.once("error", reject);
    void exited.then(() => reject(new Error(`${command} exited before it was ready:\n${log}`)));
  });
  return {
    pid: proc.pid!,
    async stop(signal) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
}
