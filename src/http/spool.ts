// The spool of transcription uploads (docs/fleet.md#transcription): each upload is a file named
// after the process that wrote it — its pid and start time — so that a process starting up can tell
// the leftovers of a crash from the uploads other gateway processes sharing the directory (workers)
// are writing now, and remove the leftovers.
import { randomUUID } from "node:crypto";
import { readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PREFIX = "sluice-audio-";
// this process's start, in ms: with the pid, what tells its files from an earlier process's of the same pid
const STARTED = Math.round(performance.timeOrigin);
// directories this process has swept: once each, at its first configuration naming them
const swept = new Set<string>();

/** A fresh file name in `dir` (default: the OS's temporary directory) for an upload of this process. */
export function spoolPath(dir = tmpdir()): string {
  return join(dir, `${PREFIX}${process.pid}-${STARTED}-${randomUUID()}`);
}

/** Removes the uploads left in `dir` by processes that are gone (once per directory and process);
 *  resolves to how many were removed. A directory that cannot be read removes nothing. */
export async function sweepSpool(dir = tmpdir()): Promise<number> {
  if (swept.has(dir)) return 0;
  swept.add(dir);
  const names = await readdir(dir).catch(() => [] as string[]);
  const left = names.filter((name) => name.startsWith(PREFIX) && !isLive(name.slice(PREFIX.length)));
  await Promise.all(left.map((name) => rm(join(dir, name), { force: true }).catch(() => undefined)));
  return left.length;
}

/** Whether the upload named `rest` (`pid-started-uuid`) may belong to a process still running. */
function isLive(rest: string): boolean {
  const [pid, started] = rest.split("-", 2).map(Number);
  if (!Number.isInteger(pid) || !Number.isInteger(started)) return false; // an older gateway's name
  if (pid === process.pid) return started === STARTED;
  try {
    process.kill(pid!, 0); // only asks whether the process exists
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"; // it exists, as another user's
  }
}
