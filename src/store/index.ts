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
    case "redis":
      throw new Error("the redis store is not available yet");
  }
}
