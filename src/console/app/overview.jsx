// Overview: requests, errors, tokens and points over time by model (the dashboard API), and each
// channel's state, load and cache hits.
import { useMemo, useState } from "preact/hooks";
import { api } from "./api.js";
import { TimeChart } from "./chart.jsx";
import { RANGES, loadChannels, loadDashboard, seriesByModel, totalsByChannel } from "./dashboard.js";
import { compact, duration, integer, percent, points as pts } from "./format.js";
import { Badge, Empty, Loaded, Select, Stat, Table, useLoad } from "./ui.jsx";
import { ChannelState } from "./channels.jsx";

const METRICS = [
  ["Requests", (i) => i.request_count, compact, true],
  ["Errors", (i) => i.exception_count, compact, true],
  ["Tokens", (i) => i.total_tokens, compact, true],
  ["Points", (i) => i.used_amount, pts, false],
];

export function Overview({ tz }) {
  const [range, setRange] = useState("24h");
  const dash = useLoad(() => loadDashboard(range, tz), [range, tz]);
  const channels = useLoad(() => loadChannels(api), []);
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <Select label="Range" name="range" value={range} options={RANGES.map((r) => [r[0], r[1]])} onChange={setRange} />
      </div>
      <Loaded state={dash} what="Loading the dashboard">
        {(d) => <Figures dash={d} tz={tz} />}
      </Loaded>
      <section class="card">
        <h2>Channels</h2>
        <Loaded state={channels} what="Loading channels">
          {(list) => <ChannelTable list={list} totals={dash.data ? totalsByChannel(dash.data.points) : new Map()} />}
        </Loaded>
      </section>
    </>
  );
}

function Figures({ dash, tz }) {
  const all = totalsByChannel(dash.points).get("all");
  const charts = useMemo(() => METRICS.map(([title, metric, format, whole]) => ({ title, format, whole, series: seriesByModel(dash, metric) })), [dash]);
  if (!all) return <Empty>No calls in this range yet. Calls made through the gateway show here within seconds.</Empty>;
  return (
    <>
      <div class="stats">
        <Stat label="Requests" value={compact(all.requests)} note={`${integer(all.requests)} calls`} />
        <Stat label="Errors" value={compact(all.errors)} note={`${percent(all.errors, all.requests)} of calls`} />
        <Stat label="Tokens" value={compact(all.input + all.output)} note={`${compact(all.input)} in · ${compact(all.output)} out`} />
        <Stat label="Points" value={pts(all.points)} note={`${pts(all.points / all.requests)} a call`} />
        <Stat label="Mean duration" value={duration(all.time / all.requests)} note={`first byte ${duration(all.ttfb / all.requests)}`} />
        <Stat label="Cache hits" value={percent(all.cached, all.input)} note={`${compact(all.cached)} cached input tokens`} />
      </div>
      <div class="charts">
        {charts.map((c) => (
          <section class="card" key={c.title}>
            <TimeChart title={`${c.title} by model`} x={dash.x} series={c.series} tz={tz} format={c.format} whole={c.whole} />
          </section>
        ))}
      </div>
    </>
  );
}

function ChannelTable({ list, totals }) {
  if (list.length === 0) return <Empty>No channels are configured.</Empty>;
  const t = (c) => totals.get(c.id);
  return (
    <Table
      label="channels"
      rowKey={(c) => c.id}
      rows={list}
      columns={[
        { label: "Channel", value: (c) => c.name },
        { label: "State", value: (c) => <ChannelState channel={c} /> },
        { label: "In flight", num: true, value: (c) => integer(c.live?.inFlight ?? 0) },
        { label: "Queued", num: true, value: (c) => integer(c.live?.queued ?? 0) },
        { label: "Calls", num: true, value: (c) => integer(t(c)?.requests ?? 0) },
        { label: "Errors", num: true, value: (c) => (t(c)?.errors ? <Badge tone="bad">{integer(t(c).errors)}</Badge> : "0") },
        { label: "Cache hits", num: true, value: (c) => (t(c) ? percent(t(c).cached, t(c).input) : "–") },
      ]}
    />
  );
}
