// Calendar periods in a time zone (docs/configuration.md#quotas-by-time): the day, week (from Monday)
// or month a moment falls in, as a label and the epoch ms of its start and end. Period budgets are
// spent per period (the label names the store's spend scope, so the next period starts at zero and a
// restart keeps the current one's spend); the usage report buckets rows by local day and hour.
import { LRUCache } from "lru-cache";

export type Period = "day" | "week" | "month";

export interface PeriodSpan {
  /** `2026-11-27` (day), the Monday `2026-11-23` (week) or `2026-11` (month) */
  label: string;
  /** epoch ms, inclusive */
  start: number;
  /** epoch ms, exclusive: when the next period starts (its budget resets) */
  end: number;
}

export interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
}

// time zones come from the config or a report's query: a few in practice, bounded anyway
const formats = new LRUCache<string, Intl.DateTimeFormat>({ max: 256 });
const spans = new LRUCache<string, PeriodSpan>({ max: 256 });

function formatOf(tz: string): Intl.DateTimeFormat {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: tz, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric" });
    formats.set(tz, f);
  }
  return f;
}

/** The wall-clock date and time in `tz` at epoch ms `ms`. */
export function localTime(ms: number, tz: string): LocalTime {
  const t: Record<string, number> = {};
  for (const part of formatOf(tz).formatToParts(ms)) if (part.type !== "literal") t[part.type] = Number(part.value);
  return { year: t.year!, month: t.month!, day: t.day!, hour: t.hour!, minute: t.minute! };
}

/** Epoch ms of a wall-clock time in `tz` (fields past their range roll over, as Date.UTC's do). */
export function zonedTime(tz: string, year: number, month: number, day: number, hour = 0): number {
  const wall = Date.UTC(year, month - 1, day, hour);
  const offset = (ms: number) => {
    const l = localTime(ms, tz);
    return Date.UTC(l.year, l.month - 1, l.day, l.hour, l.minute) - Math.floor(ms / 60_000) * 60_000;
  };
  // twice: the offset at the guess may differ from the offset at the answer (a DST change between)
  const guess = wall - offset(wall);
  return wall - offset(guess);
}

const pad = (n: number) => String(n).padStart(2, "0");
const dateLabel = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The period of `period` in `tz` that epoch ms `now` falls in. */
export function periodSpan(now: number, period: Period, tz: string): PeriodSpan {
  const cacheKey = `${period}|${tz}`;
  const cached = spans.get(cacheKey);
  if (cached && cached.start <= now && now < cached.end) return cached;
  const { year, month, day } = localTime(now, tz);
  let span: PeriodSpan;
  if (period === "month") {
    span = { label: `${year}-${pad(month)}`, start: zonedTime(tz, year, month, 1), end: zonedTime(tz, year, month + 1, 1) };
  } else {
    // a week starts on Monday (ISO 8601)
    const first = period === "week" ? day - ((new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 6) % 7) : day;
    const days = period === "week" ? 7 : 1;
    span = { label: dateLabel(Date.UTC(year, month - 1, first)), start: zonedTime(tz, year, month, first), end: zonedTime(tz, year, month, first + days) };
  }
  spans.set(cacheKey, span);
  return span;
}

/** A usage row's local day (`2026-11-27`) or hour (`2026-11-27T13:00`) in `tz`. */
export function localBucket(ms: number, unit: "day" | "hour", tz: string): string {
  const l = localTime(ms, tz);
  const date = `${l.year}-${pad(l.month)}-${pad(l.day)}`;
  return unit === "day" ? date : `${date}T${pad(l.hour)}:00`;
}
