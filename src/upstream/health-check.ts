// Active health checks (docs/configuration.md#channels `healthCheck`): every `intervalMs`,
// `GET {baseUrl}/v1/models` with the channel key, so a dead channel is known before a user meets it
// and `sluice_channel_up` tells the truth. Checks go on while a channel's breaker is open: a good one
// closes it, so a breaker one caller's requests opened does not wait out its cooldown
// (docs/api.md#upstream-failures). Echo channels are local and up from the start.
import type { ChannelEntry } from "./types.js";

export interface HealthDeps {
  report: (entry: ChannelEntry, ok: boolean, outcome?: string) => void;
}

export function startHealthChecks(entries: ChannelEntry[], deps: HealthDeps): { stop(): void } {
  const timers: NodeJS.Timeout[] = [];
  for (const entry of entries) {
    if (entry.config.type === "echo") {
      deps.report(entry, true);
      continue;
    }
    const { intervalMs, timeoutMs } = entry.config.healthCheck;
    const { check } = entry.client;
    if (intervalMs <= 0 || !check) continue;
    const run = () => {
      void check(timeoutMs).then((ok) => {
        entry.healthFailing = !ok;
        deps.report(entry, ok, ok ? "ok" : "health_check");
      });
    };
    run();
    const timer = setInterval(run, intervalMs);
    timer.unref();
    timers.push(timer);
  }
  return { stop: () => timers.forEach(clearInterval) };
}
