// Loaded into Sluice by `npm run bench -- --heap-profile` (node --import): V8's sampling heap
// profiler, counting what a major collection frees as well as what stays alive — what reached the old
// generation, where minor collections were meant to free it (docs/performance.md#large-bodies-and-the-old-generation).
// The first SIGUSR2 starts sampling, the second writes the profile to $SLUICE_HEAP_PROFILE.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

const session = new Session();
session.connect();
let sampling = false;
process.on("SIGUSR2", () => {
  if (!sampling) {
    sampling = true;
    session.post("HeapProfiler.enable", () =>
      session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false } as never),
    );
    return;
  }
  session.post("HeapProfiler.stopSampling", (err, result) => {
    writeFileSync(process.env.SLUICE_HEAP_PROFILE!, err ? JSON.stringify({ error: err.message }) : JSON.stringify(result.profile));
  });
});
