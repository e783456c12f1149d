// Files that hold chats, usage rows or log lines are readable by the gateway's user only: created
// 0600 in folders created 0700 (docs/operations.md#files). A file or folder that already exists keeps
// the mode its owner gave it.
import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";

/** Makes `path`'s folder (0700, each folder made) and `path` itself (0600) unless they exist. */
export function createPrivateFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // "a": created when missing, never truncated; the mode applies only to a file created here
  closeSync(openSync(path, "a", 0o600));
}
