// Usage: GET /api/v1/usage grouped by key, user, model or day (and by day), a date range in the
// chosen zone; a chart and a table of the same groups; the CSV the API makes, downloaded.
import { useMemo, useState } from "preact/hooks";
import { api, query } from "./api.js";
import { BarList, TimeChart } from "./chart.jsx";
import { compact, day, integer, nextDay, points as pts, startOfDay } from "./format.js";
import { Empty, ErrorBox, Loaded, Pager, Select, Table, useLoad, usePages } from "./ui.jsx";

const DIMENSIONS = [
  ["key", "Key"],
  ["user", "User"],
  ["model", "Model"],
  ["day", "Day"],
];
const METRICS = [
  ["points", "Points", pts],
  ["requests", "Requests", compact],
  ["tokens", "Tokens", compact],
];
const TOP = 8;
const valueOf = (g, metric) => (metric === "tokens" ? g.inputTokens + g.outputTokens : g[metric]);
const labelOf = (v) => (v === null ? "(none)" : v);

/** The query both the page and its CSV ask: [from, to) from the first day's start to the day after the last, in `tz`. */
function usageQuery({ by, byDay, from, to, tz }) {
  const groupBy = by === "day" || !byDay ? by : `${by},day`;
  return { groupBy, from: new Date(startOfDay(from, tz)).toISOString(), to: new Date(startOfDay(nextDay(to), tz)).toISOString(), tz };
}

export function Usage({ tz }) {
  const today = day(Date.now(), tz);
  const [form, setForm] = useState(() => ({ by: "key", byDay: true, from: day(Date.now() - 6 * 86400_000, tz), to: today, metric: "points" }));
  const q = usageQuery({ ...form, tz });
  // the answer keeps the query it answers: a table is never drawn with another query's columns
  const report = useLoad(async () => ({ report: await api(`/api/v1/usage${query(q)}`), asked: { ...form }, dims: q.groupBy.split(",") }), [JSON.stringify(q)]);
  const set = (field) => (value) => setForm({ ...form, [field]: value });
  const badRange = form.from > form.to;
  return (
    <>
      <div class="page-head">
        <h1>Usage</h1>
        <div class="controls">
          <Select label="Group by" name="by" value={form.by} options={DIMENSIONS} onChange={set("by")} />
          {form.by !== "day" && (
            <label class="field check">
              <input type="checkbox" name="byDay" checked={form.byDay} onChange={(e) => set("byDay")(e.currentTarget.checked)} />
              <span>by day</span>
            </label>
          )}
          <label class="field">
            <span>From</span>
            <input type="date" name="from" value={form.from} max={form.to} onChange={(e) => e.currentTarget.value && set("from")(e.currentTarget.value)} />
          </label>
          <label class="field">
            <span>To</span>
            <input type="date" name="to" value={form.to} min={form.from} onChange={(e) => e.currentTarget.value && set("to")(e.currentTarget.value)} />
          </label>
          <Select label="Chart" name="metric" value={form.metric} options={METRICS.map(([v, l]) => [v, l])} onChange={set("metric")} />
          <CsvButton q={q} />
        </div>
      </div>
      <p class="muted small">
        Days in {tz}, from the start of {form.from} to the end of {form.to}.
      </p>
      {badRange ? (
        <ErrorBox error={{ message: "The range ends before it starts." }} />
      ) : (
        <Loaded state={report} what="Loading usage">
          {(r) => <Report report={r.report} form={{ ...r.asked, metric: form.metric }} tz={tz} dims={r.dims} />}
        </Loaded>
      )}
    </>
  );
}

function Report({ report, form, tz, dims }) {
  const [, metricLabel, format] = METRICS.find(([m]) => m === form.metric);
  const chart = useMemo(() => chartOf(report.groups, form, dims, tz), [report, form.metric, form.from, form.to, tz]);
  const pages = usePages(report.groups, 25);
  if (report.groups.length === 0) return <Empty>No usage in this range.</Empty>;
  const columns = [
    ...dims.map((d) => ({ label: DIMENSIONS.find(([v]) => v === d)[1], value: (g) => labelOf(g[d]), class: d === "day" ? "nowrap" : "cell-text" })),
    { label: "Requests", num: true, value: (g) => integer(g.requests) },
    { label: "Input", num: true, value: (g) => compact(g.inputTokens) },
    { label: "Output", num: true, value: (g) => compact(g.outputTokens) },
    { label: "Cached", num: true, value: (g) => compact(g.cachedTokens) },
    { label: "Points", num: true, value: (g) => pts(g.points) },
  ];
  const t = report.totals;
  const totals = [integer(t.requests), compact(t.inputTokens), compact(t.outputTokens), compact(t.cachedTokens ?? report.groups.reduce((n, g) => n + g.cachedTokens, 0)), pts(t.points)];
  return (
    <>
      <section class="card">
        {chart.x ? (
          <TimeChart title={`${metricLabel} by ${dims[0]}, per day`} x={chart.x} series={chart.series} tz={tz} format={format} bars={dims.length === 1} daily whole={form.metric !== "points"} />
        ) : (
          <BarList title={`${metricLabel} by ${dims[0]}`} items={chart.items} format={format} />
        )}
      </section>
      <section class="card">
        <Table label="usage" rowKey={(g) => dims.map((d) => g[d]).join("\0")} rows={pages.rows} columns={columns} foot={(c, i) => (i === 0 ? "Total" : i >= dims.length ? totals[i - dims.length] : "")} />
        <Pager {...pages} unit="groups" />
      </section>
    </>
  );
}

/** Per day: a series per value of the first dimension (the largest TOP, the rest as "others"); without days: a bar per value. */
function chartOf(groups, form, dims, tz) {
  const metric = (g) => valueOf(g, form.metric);
  if (!dims.includes("day")) {
    const items = groups.map((g) => ({ label: labelOf(g[dims[0]]), value: metric(g) })).sort((a, b) => b.value - a.value);
    return { items: items.slice(0, 20) };
  }
  const days = [];
  for (let d = form.from; d <= form.to; d = nextDay(d)) days.push(d);
  const x = days.map((d) => startOfDay(d, tz) / 1000);
  const at = new Map(days.map((d, i) => [d, i]));
  if (dims.length === 1) return { x, series: [{ label: "all", values: days.map((d) => groups.filter((g) => g.day === d).reduce((n, g) => n + metric(g), 0)) }] };
  const totals = new Map();
  for (const g of groups) totals.set(labelOf(g[dims[0]]), (totals.get(labelOf(g[dims[0]])) ?? 0) + metric(g));
  const ranked = [...totals].sort((a, b) => b[1] - a[1]).map(([l]) => l);
  const shown = new Set(ranked.slice(0, ranked.length > TOP ? TOP - 1 : TOP));
  const series = new Map([...shown].map((l) => [l, days.map(() => 0)]));
  if (ranked.length > shown.size) series.set("others", days.map(() => 0));
  for (const g of groups) {
    const label = shown.has(labelOf(g[dims[0]])) ? labelOf(g[dims[0]]) : "others";
    if (at.has(g.day)) series.get(label)[at.get(g.day)] += metric(g);
  }
  return { x, series: [...series].map(([label, values]) => ({ label, values })) };
}

function CsvButton({ q }) {
  const [error, setError] = useState(undefined);
  async function download() {
    setError(undefined);
    try {
      const csv = await api(`/api/v1/usage${query({ ...q, format: "csv" })}`, { text: true });
      const url = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = `usage-${q.groupBy.replace(",", "-")}-${q.from.slice(0, 10)}.csv`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      setError(err);
    }
  }
  return (
    <div class="field">
      <span>&nbsp;</span>
      <button type="button" onClick={download} id="csv">
        Download CSV
      </button>
      {error && <ErrorBox error={error} />}
    </div>
  );
}
