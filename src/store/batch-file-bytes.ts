// Where a file's bytes are kept with the SQLite store (docs/batches.md#durability): one file per id
// under `batches.dir` (mode 0600), written beside it first and renamed into place, so a file is there
// whole or not at all.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, copyFileSync } from "node:fs";
import { join } from "node:path";

export interface FileBytes {
  put(id: string, source: { path: string } | { bytes: Buffer }): void;
  read(id: string): Buffer | undefined;
  remove(id: string): void;
}

/** File ids are made by Sluice (`file-` and hex): nothing else is ever joined to the folder. */
const SAFE_ID = /^file-[0-9a-f]{24,64}$/;

export function createDiskBytes(dir: string): FileBytes {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pathOf = (id: string) => {
    if (!SAFE_ID.test(id)) throw new Error("not a file id");
    return join(dir, id);
  };
  return {
    put(id, source) {
      const path = pathOf(id);
      const part = `${path}.part`;
      if ("bytes" in source) writeFileSync(part, source.bytes, { mode: 0o600 });
      else
        try {
          renameSync(source.path, part);
        } catch {
          // another file system: copied instead
          copyFileSync(source.path, part);
          rmSync(source.path, { force: true });
        }
      renameSync(part, path);
    },
    read(id) {
      try {
        return readFileSync(pathOf(id));
      } catch {
        return undefined;
      }
    },
    remove(id) {
      rmSync(pathOf(id), { force: true });
    },
  };
}
