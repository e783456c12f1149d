// Numbers, durations and dates for people (docs/console.md#how-values-are-shown): 1.2k tokens,
// 3.4 s, dates in the time zone the console is set to.
const UNITS = [
  [1e9, "B"],
  [1e6, "M"],
  [1e3, "k"],
];

const trim = (n, digits) => String(Number(n.toFixed(digits)));

/** 950, 1.2k, 3.4M */
export function compact(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  const abs = Math.abs(n);
  for (const [size, unit] of UNITS) if (abs >= size) return `${trim(n / size, abs / size >= 100 ? 0 : 1)}${unit}`;
  return trim(n, abs >= 100 ? 0 : abs >= 1 ? 1 : 3);
}

/** Points keep more digits: a call costs thousandths. */
export function points(n) {
  if (n === null || n === undefined) return "–";
  return Math.abs(n) >= 1000 ? compact(n) : trim(n, Math.abs(n) >= 10 ? 1 : 3);
}

/** Whole numbers with separators: 12,345 */
export const integer = (n) => (n === null || n === undefined ? "–" : Math.round(n).toLocaleString("en-US"));

export const percent = (part, whole) => (whole > 0 ? `${trim((100 * part) / whole, part / whole < 0.1 ? 1 : 0)}%` : "–");

const NBSP = "\u00a0"; // a figure and its unit stay on one line

/** 340 ms, 3.4 s, 2 min 5 s */
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "–";
  if (ms < 1000) return `${Math.round(ms)}${NBSP}ms`;
  if (ms < 60_000) return `${trim(ms / 1000, 1)}${NBSP}s`;
  const s = Math.round(ms / 1000);
  return s < 3600 ? `${Math.floor(s / 60)}${NBSP}min ${s % 60}${NBSP}s` : `${Math.floor(s / 3600)}${NBSP}h ${Math.floor((s % 3600) / 60)}${NBSP}min`;
}

const formatters = new Map();
function partsIn(ms, tz) {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: tz, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
    formatters.set(tz, f);
  }
  const p = {};
  for (const { type, value } of f.formatToParts(new Date(ms))) p[type] = value;
  return p;
}

/** 2026-12-02 14:05:09 in `tz` */
export function dateTime(ms, tz) {
  if (ms === null || ms === undefined) return "–";
  const p = partsIn(ms, tz);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

/** 40 s ago, 5 min ago, 3 h ago, 2 d ago */
export function ago(ms, now = Date.now()) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** 2026-12-02 14:05 in `tz` */
export function dateMinute(ms, tz) {
  const p = partsIn(ms, tz);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

/** 12-02 14:05:09 in `tz`: a table's column of recent times */
export function shortDateTime(ms, tz) {
  if (ms === null || ms === undefined) return "–";
  const p = partsIn(ms, tz);
  return `${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

/** 2026-12-02 in `tz` */
export function day(ms, tz) {
  const p = partsIn(ms, tz);
  return `${p.year}-${p.month}-${p.day}`;
}

/** The zone's offset from UTC at `ms`, in ms. */
function offset(ms, tz) {
  const p = partsIn(ms, tz);
  return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second) - Math.floor(ms / 1000) * 1000;
}

/** The instant a calendar day ("2026-12-02") starts in `tz`. */
export function startOfDay(date, tz) {
  const [y, m, d] = date.split("-").map(Number);
  const guess = Date.UTC(y, m - 1, d);
  const first = guess - offset(guess, tz);
  return guess - offset(first, tz);
}

/** The next calendar day's date string. */
export function nextDay(date) {
  const [y, m, d] = date.split("-").map(Number);
  return new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10);
}

/** Where the current day, week (from Monday) or month began in `tz`. */
export function periodStart(period, now, tz) {
  const today = day(now, tz);
  if (period === "month") return startOfDay(`${today.slice(0, 8)}01`, tz);
  if (period === "week") {
    const [y, m, d] = today.split("-").map(Number);
    const weekday = (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7;
    return startOfDay(new Date(Date.UTC(y, m - 1, d - weekday)).toISOString().slice(0, 10), tz);
  }
  return startOfDay(today, tz);
}

/** The browser's zone, and every zone the browser knows, for the zone picker. */
export const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
export function zones() {
  const known = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  return ["UTC", ...known.filter((z) => z !== "UTC")];
}
