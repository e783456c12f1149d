// Watching the config file for saves (a change of the file reloads it: docs/operations.md#reload). Used by the
// process that owns reloads: the gateway's own in one process, the primary with several workers.
import { watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { Logger } from "../observability/logger.js";

const WATCH_DEBOUNCE_MS = 200;

/** Watches the file's folder (editors replace files rather than write them in place), debounced. */
export function watchConfigFile(path: string, changed: () => void, log: Logger): void {
  let timer: NodeJS.Timeout | undefined;
  const name = basename(path);
  try {
    const watcher = watch(dirname(path), (_, file) => {
      if (file !== null && file !== name) return;
      clearTimeout(timer);
      timer = setTimeout(changed, WATCH_DEBOUNCE_MS);
    });
    watcher.on("error", () => watcher.close());
    watcher.unref();
  } catch {
    log.warn("cannot watch the config file: reload with SIGHUP or POST /api/admin/reload");
  }
}
