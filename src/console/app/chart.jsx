// Time-series charts with uPlot (docs/console.md#why-preact-and-uplot): one line per series, the
// time axis in the console's zone, sized to its box (a phone's width too). The plotted values ride
// along in data-chart as JSON, for assistive tools and the tests.
import uPlot from "uplot";
import { useEffect, useRef } from "preact/hooks";
import { compact } from "./format.js";

export const PALETTE = ["#2563eb", "#16a34a", "#ea580c", "#9333ea", "#0891b2", "#dc2626", "#ca8a04", "#db2777", "#4b5563"];

/**
 * `x`: Unix seconds; `series`: [{label, values}] (one value per x); `format`: a value as text.
 */
/** steps of an axis of counts: whole numbers only */
const WHOLE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8, 1e9];

export function TimeChart({ title, x, series, tz, format = compact, height = 200, bars = false, daily = false, whole = false }) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el || x.length === 0) return undefined;
    const opts = {
      width: Math.max(200, el.clientWidth),
      height,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), tz),
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false } },
      scales: { y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: "#64748b", grid: { stroke: "#eef2f7" }, ticks: { stroke: "#e2e8f0" }, ...(daily ? dayAxis(x, tz) : {}) },
        { stroke: "#64748b", grid: { stroke: "#eef2f7" }, ticks: { stroke: "#e2e8f0" }, size: 48, values: (_u, vals) => vals.map((v) => format(v)), ...(whole ? { incrs: WHOLE } : {}) },
      ],
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length],
          fill: bars ? `${PALETTE[i % PALETTE.length]}cc` : `${PALETTE[i % PALETTE.length]}14`,
          width: 2,
          points: { show: x.length <= 14 },
          paths: bars ? uPlot.paths.bars({ size: [0.6, 40] }) : undefined,
          value: (_u, v) => (v === null || v === undefined ? "–" : format(v)),
        })),
      ],
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)], el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(200, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [x, series, tz, height, bars, daily, whole]);
  const data = JSON.stringify({ x, series: series.map((s) => ({ label: s.label, values: s.values })) });
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {x.length === 0 ? <div class="state empty">No data in this range.</div> : <div class="chart-box" ref={box} data-chart={data} />}
    </figure>
  );
}

const DAY_LABEL = new Map();
/** One tick per day (every few days on a narrow chart), labelled "Nov 26" in the zone. */
function dayAxis(x, tz) {
  let f = DAY_LABEL.get(tz);
  if (!f) DAY_LABEL.set(tz, (f = new Intl.DateTimeFormat("en-US", { timeZone: tz, month: "short", day: "numeric" })));
  return {
    splits: (u) => {
      const every = Math.max(1, Math.ceil((x.length * 64) / Math.max(1, u.bbox.width / devicePixelRatio)));
      return x.filter((_, i) => i % every === 0);
    },
    values: (_u, splits) => splits.map((s) => f.format(new Date(s * 1000))),
  };
}

/** Horizontal bars of one value per label, for groups without a time axis. */
export function BarList({ title, items, format = compact }) {
  const max = Math.max(0, ...items.map((i) => i.value));
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {items.length === 0 ? (
        <div class="state empty">No data in this range.</div>
      ) : (
        <ul class="bars" data-chart={JSON.stringify({ series: items.map((i) => ({ label: i.label, values: [i.value] })) })}>
          {items.map((i, n) => (
            <li>
              <span class="bar-label" title={i.label}>
                {i.label}
              </span>
              <span class="bar-track">
                <span class="bar-fill" style={{ width: `${max > 0 ? (100 * i.value) / max : 0}%`, background: PALETTE[n % PALETTE.length] }} />
              </span>
              <span class="bar-value">{format(i.value)}</span>
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}
