// Active health checks (`healthCheck`, docs/configuration.md#channels): every `intervalMs`, `GET {baseUrl}/v1/models`
// with the channel key, so a dead channel is known before a user meets it and `sluice_channel_up`
// tells the truth. A check is also the probe of a breaker past its cooldown. Echo channels are local
// and up from the start.
import type { ChannelEntry } from "./router.js";

export interface HealthDeps {
  report: (entry: ChannelEntry, ok: boolean, outcome?: string) => void;
  /** false while the channel's breaker is open: no check is sent then */
  admit: (entry: ChannelEntry) => boolean;
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
      if (!deps.admit(entry)) return;
      void check(timeoutMs).then((ok) => deps.report(entry, ok, ok ? "ok" : "health_check"));
    };
    run();
    const timer = setInterval(run, intervalMs);
    timer.unref();
    timers.push(timer);
  }
  return { stop: () => timers.forEach(clearInterval) };
}
