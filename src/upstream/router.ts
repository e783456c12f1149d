// Chooses the channel for a model: the highest priority group of channels serving it, weighted at
// random inside the group, channels seen down tried last. The rest follow as fail-over candidates.
import type { ChannelConfig } from "../config/schema.js";
import type { Observer } from "../observability/observer.js";
import { createEchoChannel } from "./echo-channel.js";
import { createOpenAIChannel } from "./openai-channel.js";
import type { ChannelClient } from "./types.js";

interface ChannelEntry {
  config: ChannelConfig;
  client: ChannelClient;
  up: boolean;
}

export function createChannelRouter(channels: ChannelConfig[], observer: Observer, random: () => number = Math.random) {
  const entries = channels.map<ChannelEntry>((config) => ({
    config,
    client: config.type === "echo" ? createEchoChannel(config) : createOpenAIChannel(config, (depth) => observer.channelQueue(config.name, depth)),
    up: true,
  }));
  const byModel = new Map<string, ChannelEntry[]>();
  for (const e of entries) for (const m of e.config.models) byModel.set(m, [...(byModel.get(m) ?? []), e]);

  /** Candidates in the order to try them; empty when no channel serves the model. */
  function candidates(model: string): ChannelEntry[] {
    const list = byModel.get(model);
    if (!list || list.length === 0) return [];
    if (list.length === 1) return list;
    const remaining = [...list];
    const ordered: ChannelEntry[] = [];
    while (remaining.length > 0) {
      const pick = pickNext(remaining, random);
      ordered.push(pick);
      remaining.splice(remaining.indexOf(pick), 1);
    }
    return ordered;
  }

  function report(entry: ChannelEntry, up: boolean): void {
    if (entry.up === up) return;
    entry.up = up;
    observer.channelState(entry.config.name, up);
  }

  return {
    candidates,
    report,
    serves: (model: string) => byModel.has(model),
    close: () => Promise.all(entries.map((e) => e.client.close())).then(() => undefined),
  };
}

export type ChannelRouter = ReturnType<typeof createChannelRouter>;
export type { ChannelEntry };

function pickNext(list: ChannelEntry[], random: () => number): ChannelEntry {
  const up = list.filter((e) => e.up);
  const pool = up.length > 0 ? up : list;
  const top = Math.max(...pool.map((e) => e.config.priority));
  const group = pool.filter((e) => e.config.priority === top);
  const total = group.reduce((s, e) => s + e.config.weight, 0);
  let r = random() * total;
  for (const e of group) {
    r -= e.config.weight;
    if (r < 0) return e;
  }
  return group[group.length - 1]!;
}
