// Channels: state (enabled, up, breaker), load, where calls went in the last 24 hours (calls, share
// of the model's calls, retries, cache hits); test a model, enable or disable, reload the config.
import { useState } from "preact/hooks";
import { ApiError, aiproxy, api } from "./api.js";
import { loadChannels, loadDashboard, totalsByChannel } from "./dashboard.js";
import { compact, dateTime, duration, integer, percent } from "./format.js";
import { Badge, Empty, ErrorBox, Loaded, useLoad } from "./ui.jsx";

export function ChannelState({ channel }) {
  const live = channel.live;
  const breaker = live?.breaker.state ?? channel.sluice?.breaker ?? "closed";
  return (
    <span class="badges">
      {channel.status === 2 ? <Badge tone="off">disabled</Badge> : <Badge tone="ok">enabled</Badge>}
      {(live?.up ?? channel.sluice?.up) ? <Badge tone="ok">up</Badge> : <Badge tone="bad">down</Badge>}
      {breaker !== "closed" && <Badge tone="warn">breaker {breaker.replace("_", "-")}</Badge>}
    </span>
  );
}

export function Channels({ tz }) {
  const channels = useLoad(() => loadChannels(api), []);
  const dash = useLoad(() => loadDashboard("24h", tz), [tz]);
  const [reloaded, setReloaded] = useState(undefined);
  async function reload() {
    setReloaded({ busy: true });
    try {
      setReloaded({ result: await api("/api/admin/reload", { method: "POST" }) });
    } catch (err) {
      // a reload that failed answers 422 with its problems
      setReloaded(err instanceof ApiError && err.data?.errors ? { result: err.data } : { error: err });
    }
    channels.reload();
  }
  return (
    <>
      <div class="page-head">
        <h1>Channels</h1>
        <div class="actions">
          <button type="button" onClick={channels.reload}>
            Refresh
          </button>
          <button type="button" class="primary" onClick={reload} disabled={reloaded?.busy} id="reload">
            Reload config
          </button>
        </div>
      </div>
      {reloaded?.result && <ReloadResult result={reloaded.result} />}
      {reloaded?.error && <ErrorBox error={reloaded.error} />}
      <Loaded state={channels} what="Loading channels">
        {(list) =>
          list.length === 0 ? (
            <Empty>No channels are configured.</Empty>
          ) : (
            <div class="channel-grid">
              {list.map((c) => (
                <ChannelCard key={c.id} channel={c} all={list} totals={dash.data ? totalsByChannel(dash.data.points) : undefined} points={dash.data?.points} tz={tz} changed={channels.reload} />
              ))}
            </div>
          )
        }
      </Loaded>
      <p class="fine muted">
        Figures are the last 24 hours of the call logs. The router's decisions by kind (prefix, pinned, spilled, least loaded) are counted in
        /metrics (sluice_route_decisions_total), which the console does not read.
      </p>
    </>
  );
}

const ReloadResult = ({ result }) => (
  <div class={`state ${result.ok ? "ok" : "error"}`} role="status" id="reload-result">
    {result.ok ? "Config reloaded." : "The config was not reloaded: the running one is kept."}
    {result.errors?.map((e) => (
      <div class="mono">{e}</div>
    ))}
    {result.hidden?.length > 0 && <div>Hidden by channels written through the AI Proxy API: {result.hidden.join(", ")}</div>}
  </div>
);

/** A model's calls on every channel in the range, for each channel's share of them. */
function modelCalls(points) {
  const out = new Map();
  for (const p of points ?? []) for (const i of p.summary) out.set(`${i.channel_id}\0${i.model}`, (out.get(`${i.channel_id}\0${i.model}`) ?? 0) + i.request_count);
  return out;
}

function ChannelCard({ channel: c, all, totals, points, tz, changed }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(undefined);
  const t = totals?.get(c.id);
  const calls = modelCalls(points);
  const share = (model) => {
    const mine = calls.get(`${c.id}\0${model}`) ?? 0;
    const total = all.reduce((n, o) => n + (calls.get(`${o.id}\0${model}`) ?? 0), 0);
    return total > 0 ? `${percent(mine, total)} of ${model}'s calls` : undefined;
  };
  async function setStatus(status) {
    setBusy(true);
    setError(undefined);
    try {
      await aiproxy(`/api/channel/${c.id}/status`, { method: "POST", body: { status } });
      changed();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <article class="card channel" data-channel={c.name}>
      <header class="channel-head">
        <div>
          <h2 class="channel-name">{c.name}</h2>
          <div class="muted small">
            #{c.id} · tier {c.sluice?.tier ?? 0} · weight {c.priority} · {c.sluice?.source ?? "config"}
          </div>
        </div>
        <ChannelState channel={c} />
      </header>
      <ChannelFacts channel={c} t={t} routed={c.models.map(share).filter(Boolean).join(" · ")} tz={tz} />
      <div class="models">
        {c.models.map((m) => (
          <span class="chip">{m}</span>
        ))}
      </div>
      {error && <ErrorBox error={error} />}
      <footer class="channel-actions">
        <ChannelTest channel={c} />
        {c.status === 2 ? (
          <button type="button" class="primary" disabled={busy} onClick={() => setStatus(1)}>
            Enable
          </button>
        ) : (
          <button type="button" class="danger" disabled={busy} onClick={() => setStatus(2)}>
            Disable
          </button>
        )}
      </footer>
    </article>
  );
}

/** A channel's live state and its last 24 hours. */
function ChannelFacts({ channel, t, routed, tz }) {
  const live = channel.live;
  return (
    <dl class="facts">
      <dt>Load</dt>
      <dd>
        {integer(live?.inFlight ?? 0)} in flight · {integer(live?.queued ?? 0)} queued
      </dd>
      <dt>Breaker</dt>
      <dd>
        {(live?.breaker.state ?? "closed").replace("_", "-")}
        {live?.breaker.failures ? ` · ${live.breaker.failures} failures` : ""}
        {live?.breaker.retryAt ? ` · retry ${dateTime(Date.parse(live.breaker.retryAt), tz)}` : ""}
      </dd>
      <dt>Last 24 h</dt>
      <dd>
        {t ? `${integer(t.requests)} calls · ${integer(t.errors)} errors · ${integer(t.retries)} retried · mean ${duration(t.time / t.requests)}` : "no calls"}
      </dd>
      <dt>Cache hits</dt>
      <dd>{t ? `${percent(t.cached, t.input)} of input tokens (${compact(t.cached)}) · ${integer(t.cacheHits)} calls with hits` : "–"}</dd>
      <dt>Routed here</dt>
      <dd>{routed || "–"}</dd>
      {live?.lastError && (
        <>
          <dt>Last error</dt>
          <dd>
            {live.lastError.outcome} at {dateTime(Date.parse(live.lastError.at), tz)}
          </dd>
        </>
      )}
    </dl>
  );
}

function ChannelTest({ channel }) {
  const [model, setModel] = useState(channel.models[0] ?? "");
  const [result, setResult] = useState(undefined);
  async function test() {
    setResult({ busy: true });
    try {
      const answer = await api(`/api/channel/${channel.id}/test/${encodeURIComponent(model)}`, { envelope: true });
      setResult({ answer });
    } catch (err) {
      setResult({ error: err });
    }
  }
  return (
    <div class="channel-test">
      <select aria-label="model to test" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
        {channel.models.map((m) => (
          <option value={m}>{m}</option>
        ))}
      </select>
      <button type="button" onClick={test} disabled={result?.busy || !model}>
        {result?.busy ? "Testing…" : "Test"}
      </button>
      {result?.answer && (
        <span class={`test-result ${result.answer.success ? "ok" : "bad"}`} role="status">
          {result.answer.success ? `passed in ${duration((result.answer.data?.took ?? 0) * 1000)}` : `failed: ${result.answer.message}`}
        </span>
      )}
      {result?.error && <span class="test-result bad">{result.error.message}</span>}
    </div>
  );
}
