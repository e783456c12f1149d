// Picks the Store implementation that config.store names.
import type { Config } from "../config/schema.js";
import { createSqliteStore } from "./sqlite.js";
import type { Store } from "./types.js";

export function createStore(config: Config["store"]): Store {
  switch (config.driver) {
    case "sqlite":
      return createSqliteStore(config.path);
    case "memory":
      return createSqliteStore(":memory:");
    case "postgres":
      // said at start-up, before anything listens: several instances are not supported yet
      throw new Error("the postgres store is not available yet: use the sqlite store (one instance)");
  }
}
