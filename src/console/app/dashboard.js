// FastGPT's dashboard API (GET /api/dashboardv2/, docs/fastgpt.md#dashboard) read for the console:
// a range's buckets, the empty ones filled in, and its figures per model and per channel.
import { aiproxy, query } from "./api.js";

export const RANGES = [
  ["1h", "Last hour", 3600, "minute", 60],
  ["24h", "Last 24 hours", 86400, "hour", 3600],
  ["7d", "Last 7 days", 7 * 86400, "hour", 3600],
  ["30d", "Last 30 days", 30 * 86400, "day", 86400],
];

/** The buckets of a range, ascending: `{x: [unix s], points: [{timestamp, summary}]}`. */
export async function loadDashboard(rangeId, tz) {
  const [, , span, timespan, step] = RANGES.find((r) => r[0] === rangeId);
  const end = Math.floor(Date.now() / 1000);
  const start = end - span;
  const points = (await aiproxy(`/api/dashboardv2/${query({ start_timestamp: start, end_timestamp: end, timespan, timezone: tz })}`)) ?? [];
  return { x: fillBuckets(points.map((p) => p.timestamp), start, end, step), points };
}

/** Every bucket of the range, aligned on those the API gave (a zone's hours may start at :30). */
function fillBuckets(given, start, end, step) {
  if (given.length === 0) return [];
  const all = new Set(given);
  const anchor = given[0];
  for (let t = anchor - step; t > start - step; t -= step) all.add(t);
  for (let t = anchor + step; t <= end; t += step) all.add(t);
  // a day bucket's length moves with daylight saving: keep the API's own starts over the filled ones near them
  const sorted = [...all].sort((a, b) => a - b);
  return sorted.filter((t, i) => given.includes(t) || !sorted.some((u, j) => j !== i && given.includes(u) && Math.abs(u - t) < step));
}

/** One series per model of `metric` (a summary item → number), over the buckets `x`. */
export function seriesByModel({ x, points }, metric) {
  const byModel = new Map();
  const at = new Map(x.map((t, i) => [t, i]));
  for (const p of points) {
    for (const item of p.summary) {
      let values = byModel.get(item.model);
      if (!values) byModel.set(item.model, (values = x.map(() => 0)));
      values[at.get(p.timestamp)] += metric(item);
    }
  }
  return [...byModel].sort(([a], [b]) => (a < b ? -1 : 1)).map(([label, values]) => ({ label, values }));
}

/** A range's sums over every bucket, per channel id (and `all`). */
export function totalsByChannel(points) {
  const out = new Map();
  const add = (id, item) => {
    const t = out.get(id) ?? { requests: 0, errors: 0, retries: 0, input: 0, output: 0, cached: 0, cacheHits: 0, points: 0, time: 0, ttfb: 0 };
    t.requests += item.request_count;
    t.errors += item.exception_count;
    t.retries += item.retry_count;
    t.input += item.input_tokens;
    t.output += item.output_tokens;
    t.cached += item.cached_tokens;
    t.cacheHits += item.cache_hit_count;
    t.points += item.used_amount;
    t.time += item.total_time_milliseconds;
    t.ttfb += item.total_ttfb_milliseconds;
    out.set(id, t);
  };
  for (const p of points) for (const item of p.summary) (add(item.channel_id, item), add("all", item));
  return out;
}

/** The channels as three APIs know them, joined by name: aiproxy's records (id, status), the
 *  operations API's live state (up, breaker, load) and the range's figures. */
export async function loadChannels(api) {
  const [records, live] = await Promise.all([aiproxy("/api/channels/all"), api("/api/admin/channels")]);
  const state = new Map(live.channels.map((c) => [c.name, c]));
  return records.map((r) => ({ ...r, live: state.get(r.name) }));
}
