// SQLite serves one gateway process (docs/store.md#sqlite): each process keeps its own history cache, so two
// on one file would serve stale history. The first process holds an exclusive lock on a small file
// beside the database (`<db>.lock`, itself an SQLite file: SQLite's locks are the OS's record locks);
// a second one is refused at start with the way to run several instances. The OS drops the lock when
// its process ends, however it ends (kill -9 too), so a stale lock never blocks a restart.
import { resolve } from "node:path";
import Database from "better-sqlite3";
import { createPrivateFile } from "./private-file.js";

export class SqliteInUseError extends Error {}

/** Takes the file's lock for this process; returns its release. Databases in memory need none. */
export function lockSqliteFile(path: string): () => void {
  if (path === ":memory:" || path === "" || path.startsWith("file:")) return () => {};
  const lockPath = `${resolve(path)}.lock`;
  createPrivateFile(lockPath);
  const lock = new Database(lockPath, { timeout: 0 });
  try {
    // held from the first write until the connection closes
    lock.pragma("locking_mode = EXCLUSIVE");
    lock.pragma("journal_mode = OFF");
    lock.exec(`CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL); DELETE FROM holder; INSERT INTO holder VALUES (${process.pid})`);
  } catch (err) {
    lock.close();
    if ((err as { code?: unknown }).code !== "SQLITE_BUSY") throw err;
    throw new SqliteInUseError(
      `another process is using the SQLite store ${path} (its lock ${lockPath} is held): SQLite serves one gateway ` +
        `process. To run several instances (or server.workers), use the postgres store: "store": {"driver": "postgres", "url": "postgres://…"}`,
    );
  }
  return () => lock.close();
}
