// aiproxy's dashboard (dashboardv2) as FastGPT's monitoring page reads it (docs/fastgpt.md#dashboard):
// the usage rows of a time range in buckets of a minute, hour, day or month of the caller's time
// zone, one item per channel and model of a bucket. Rows are summed per minute by the store; the
// minutes are put in buckets here, which also gives the busiest minute of each.
import type { H3Event } from "h3";
import type { Keyring } from "../auth/keys.js";
import { timeZone, type ChannelConfig } from "../config/schema.js";
import { localTime, zonedTime } from "../time/periods.js";
import type { MinuteUsage, Store } from "../store/types.js";
import { invalid, ok } from "./envelope.js";
import { param, timestampParam, wholeParam } from "./query.js";

const TIMESPANS = ["minute", "hour", "day", "month"] as const;
type Timespan = (typeof TIMESPANS)[number];
const MINUTE_MS = 60_000;

export interface DashboardDeps {
  keyring: Keyring;
  store: Store;
  channels: ChannelConfig[];
  /** what an absent or unknown `timezone` is */
  timezone: string;
}

interface Item {
  channel_id: number;
  model: string;
  request_count: number;
  exception_count: number;
  retry_count: number;
  status_4xx_count: number;
  status_5xx_count: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cached_tokens: number;
  cache_hit_count: number;
  used_amount: number;
  total_time_milliseconds: number;
  total_ttfb_milliseconds: number;
  max_rpm: number;
  max_tpm: number;
}

export function createDashboard(deps: DashboardDeps) {
  const idOfName = new Map(deps.channels.map((c) => [c.name, c.id ?? 0]));
  return async function dashboard(event: H3Event): Promise<Response> {
    const q = new URL(event.req.url).searchParams;
    const timespan = (param(q, "timespan") ?? "hour") as Timespan;
    if (!TIMESPANS.includes(timespan)) throw invalid("timespan: expected minute, hour, day or month");
    const channelId = wholeParam(q, "channel");
    const minutes = await deps.store.usageByMinute({
      from: timestampParam(q, "start_timestamp") ?? 0,
      to: timestampParam(q, "end_timestamp") ?? Date.now(),
      channel: channelId === undefined ? undefined : { id: channelId, name: deps.channels.find((c) => c.id === channelId)?.name ?? "" },
      model: param(q, "model"),
    });
    const bucketOf = bucketer(zoneOf(param(q, "timezone"), deps.timezone), timespan);
    const points = new Map<number, Map<string, Item>>();
    for (const m of minutes) {
      const start = bucketOf(m.minute);
      const items = points.get(start) ?? new Map<string, Item>();
      points.set(start, items);
      const channel = m.channelId ?? idOfName.get(m.channel) ?? 0;
      const key = `${channel}\u0000${m.model}`;
      const item = items.get(key) ?? emptyItem(channel, m.model);
      items.set(key, item);
      add(item, m);
    }
    return ok([...points].sort(([a], [b]) => a - b).map(([start, items]) => ({ timestamp: Math.floor(start / 1000), summary: [...items.values()] })));
  };
}

function emptyItem(channel: number, model: string): Item {
  return {
    channel_id: channel,
    model,
    request_count: 0,
    exception_count: 0,
    retry_count: 0,
    status_4xx_count: 0,
    status_5xx_count: 0,
    input_tokens: 0,
    output_tokens: 0,
    total_tokens: 0,
    cached_tokens: 0,
    cache_hit_count: 0,
    used_amount: 0,
    total_time_milliseconds: 0,
    total_ttfb_milliseconds: 0,
    max_rpm: 0,
    max_tpm: 0,
  };
}

function add(item: Item, m: MinuteUsage): void {
  item.request_count += m.requests;
  item.exception_count += m.exceptions;
  item.retry_count += m.retries;
  item.status_4xx_count += m.status4xx;
  item.status_5xx_count += m.status5xx;
  item.input_tokens += m.inputTokens;
  item.output_tokens += m.outputTokens;
  item.total_tokens += m.inputTokens + m.outputTokens;
  item.cached_tokens += m.cachedTokens;
  item.cache_hit_count += m.cacheHits;
  item.used_amount += m.points;
  item.total_time_milliseconds += m.durationMs;
  item.total_ttfb_milliseconds += m.ttfbMs;
  // a store groups by (channel number, channel name): one minute may come as two groups of one
  // channel only for rows written before numbers, whose busiest minute is then a lower bound
  item.max_rpm = Math.max(item.max_rpm, m.requests);
  item.max_tpm = Math.max(item.max_tpm, m.inputTokens + m.outputTokens);
}

/** The IANA zone asked for, else the default (an unknown name too). */
function zoneOf(asked: string | undefined, fallback: string): string {
  return asked && timeZone.safeParse(asked).success ? asked : fallback;
}

/** The start (epoch ms) of the bucket that holds a minute, in `zone` (its wall clock's hour, day or month). */
function bucketer(zone: string, timespan: Timespan): (minute: number) => number {
  if (timespan === "minute") return (minute) => minute;
  return (minute) => {
    const w = localTime(minute, zone);
    if (timespan === "hour") return minute - w.minute * MINUTE_MS;
    return zonedTime(zone, w.year, w.month, timespan === "day" ? w.day : 1);
  };
}
