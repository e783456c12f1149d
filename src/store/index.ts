// Picks the Store implementation that config.store names.
import type { Config } from "../config/schema.js";
import { createPostgresStore } from "./postgres.js";
import { lockSqliteFile } from "./sqlite-guard.js";
import { createSqliteStore } from "./sqlite.js";
import type { Store } from "./types.js";

/** The store, usable at once: the postgres store connects and brings its schema up to date at its
 *  first call (see openStore). A SQLite file already used by another process is refused. */
/** `batchesDir`: config `batches.dir` (docs/configuration.md#batches) */
export function createStore(config: Config["store"], opts: { batchesDir?: string } = {}): Store {
  switch (config.driver) {
    case "sqlite":
      return createLockedSqliteStore(config.path, opts.batchesDir);
    case "memory":
      return createSqliteStore(":memory:");
    case "postgres":
      return createPostgresStore(config.url);
  }
}

/** createStore, then a first call: start-up fails here, with the reason, when the store cannot be
 *  reached or its schema is newer than this build. */
export async function openStore(config: Config["store"], opts: { batchesDir?: string } = {}): Promise<Store> {
  const store = createStore(config, opts);
  try {
    await store.ping();
  } catch (err) {
    await store.close().catch(() => {});
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
    throw new Error(`the ${config.driver} store cannot be used${cause || (err instanceof Error ? `: ${err.message}` : "")}`);
  }
  return store;
}

function createLockedSqliteStore(path: string, batchesDir: string | undefined): Store {
  const release = lockSqliteFile(path);
  try {
    const store = createSqliteStore(path, { batchesDir });
    return { ...store, close: () => store.close().finally(release) };
  } catch (err) {
    release();
    throw err;
  }
}
