// Logs: the call logs (GET /api/logs/search) filtered by key, model, status and channel, a page at
// a time; a call's detail with the bodies its app keeps (GET /api/logs/detail/{id}), redacted by
// the gateway before they were stored (docs/fastgpt.md#call-logs).
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, aiproxy, query } from "./api.js";
import { compact, dateTime, duration, integer, points as pts, shortDateTime } from "./format.js";
import { Badge, Empty, ErrorBox, Loaded, Loading, Pager, Select, Table, useLoad } from "./ui.jsx";

const PER_PAGE = 20;
const SPANS = [
  ["3600", "Last hour"],
  ["86400", "Last 24 hours"],
  ["604800", "Last 7 days"],
];
const STATUS = [
  ["all", "Any status"],
  ["success", "Success (200)"],
  ["error", "Errors"],
];

export function Logs({ tz }) {
  const [filters, setFilters] = useState({ token_name: "", model_name: "", code_type: "all", channel: "", span: "86400" });
  const [page, setPage] = useState(0);
  const [open, setOpen] = useState(undefined);
  const channels = useLoad(() => aiproxy("/api/channels/all"), []);
  const key = JSON.stringify([filters, page]);
  const logs = useLoad(() => {
    const end = Date.now();
    const { span, ...rest } = filters;
    return aiproxy(`/api/logs/search${query({ ...rest, start_timestamp: end - Number(span) * 1000, end_timestamp: end, p: page + 1, per_page: PER_PAGE })}`);
  }, [key]);
  const set = (field) => (value) => (setPage(0), setFilters({ ...filters, [field]: value }));
  const names = new Map((channels.data ?? []).map((c) => [c.id, c.name]));
  return (
    <>
      <div class="page-head">
        <h1>Logs</h1>
        <button type="button" onClick={logs.reload}>
          Refresh
        </button>
      </div>
      <form class="controls filters" onSubmit={(e) => e.preventDefault()}>
        <TextFilter label="Key" name="token_name" value={filters.token_name} commit={set("token_name")} />
        <TextFilter label="Model" name="model_name" value={filters.model_name} commit={set("model_name")} />
        <Select label="Status" name="code_type" value={filters.code_type} options={STATUS} onChange={set("code_type")} />
        <Select label="Channel" name="channel" value={filters.channel} options={[["", "Any channel"], ...(channels.data ?? []).map((c) => [String(c.id), c.name])]} onChange={set("channel")} />
        <Select label="When" name="span" value={filters.span} options={SPANS} onChange={set("span")} />
      </form>
      <div class="logs-layout">
        <section class="card">
          <Loaded state={logs} what="Loading calls">
            {(d) =>
              d.logs.length === 0 ? (
                <Empty>No calls match these filters.</Empty>
              ) : (
                <>
                  <LogTable logs={d.logs} names={names} tz={tz} open={open} setOpen={setOpen} />
                  <Pager page={page} pages={Math.max(1, Math.ceil(d.total / PER_PAGE))} total={d.total} setPage={setPage} unit="calls" />
                </>
              )
            }
          </Loaded>
        </section>
        {open && <Detail log={open} name={names.get(open.channel)} tz={tz} close={() => setOpen(undefined)} />}
      </div>
    </>
  );
}

/** A text filter applied on Enter or when it loses focus, not at every key. */
function TextFilter({ label, name, value, commit }) {
  const [text, setText] = useState(value);
  return (
    <label class="field">
      <span>{label}</span>
      <input name={name} value={text} placeholder="any" onInput={(e) => setText(e.currentTarget.value)} onChange={() => commit(text.trim())} onKeyDown={(e) => e.key === "Enter" && commit(text.trim())} />
    </label>
  );
}

const statusBadge = (code) => <Badge tone={code === 200 ? "ok" : code >= 500 ? "bad" : "warn"}>{code}</Badge>;

function LogTable({ logs, names, tz, open, setOpen }) {
  return (
    <Table
      label="calls"
      stack
      rowKey={(l) => l.id}
      rows={logs}
      selected={open?.id}
      onRow={setOpen}
      columns={[
        { label: "Time", class: "nowrap", value: (l) => <span title={dateTime(l.created_at, tz)}>{shortDateTime(l.created_at, tz)}</span> },
        { label: "Key", class: "cell-text", value: (l) => l.token_name || "(share link)" },
        { label: "Model", class: "cell-text", value: (l) => l.model },
        { label: "Channel", class: "cell-text", aside: true, value: (l) => names.get(l.channel) ?? `#${l.channel}` },
        { label: "Status", value: (l) => statusBadge(l.code) },
        { label: "Tokens", num: true, aside: true, value: (l) => `${compact(l.usage.input_tokens)} / ${compact(l.usage.output_tokens)}` },
        { label: "Points", num: true, value: (l) => pts(l.used_amount) },
        { label: "Duration", num: true, value: (l) => duration(l.created_at - l.request_at) },
      ]}
    />
  );
}

/** A body as kept: pretty JSON when it parses (a cut body does not), else the text as it is. */
function pretty(body) {
  if (!body) return "";
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function Detail({ log, name, tz, close }) {
  const bodies = useLoad(
    () =>
      aiproxy(`/api/logs/detail/${log.id}`).catch((err) => {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }),
    [log.id],
  );
  const box = useRef(null);
  // on a narrow screen the detail is below the list: bring it into view
  useEffect(() => {
    if (innerWidth < 900) box.current?.scrollIntoView({ block: "start" });
  }, [log.id]);
  return (
    <aside class="card detail" id="log-detail" aria-label="call detail" ref={box}>
      <header class="detail-head">
        <h2>Call #{log.id}</h2>
        <button type="button" class="ghost" onClick={close} aria-label="close">
          ✕
        </button>
      </header>
      <CallFacts log={log} name={name} tz={tz} />
      {bodies.error ? (
        <ErrorBox error={bodies.error} retry={bodies.reload} />
      ) : bodies.loading ? (
        <Loading what="Loading bodies" />
      ) : bodies.data === null ? (
        <Empty>No bodies kept for this call: its app's logBodies is "off" (or "errors" and the call succeeded), or they are past their retention.</Empty>
      ) : (
        <>
          <Body title="Request body" text={bodies.data.request_body} cut={bodies.data.request_body_truncated} id="request-body" />
          <Body title="Response body" text={bodies.data.response_body} cut={bodies.data.response_body_truncated} id="response-body" />
        </>
      )}
    </aside>
  );
}

/** What the call log says of one call. */
const CallFacts = ({ log, name, tz }) => (
    <dl class="facts">
      <dt>Request id</dt>
      <dd class="mono">{log.request_id || "–"}</dd>
      <dt>Arrived</dt>
      <dd>{dateTime(log.request_at, tz)}</dd>
      <dt>Endpoint</dt>
      <dd class="mono">{log.endpoint}</dd>
      <dt>Key · app</dt>
      <dd>
        {log.token_name || "(share link)"} · {log.group || "–"}
      </dd>
      <dt>Model · channel</dt>
      <dd>
        {log.model} · {name ?? `#${log.channel}`}
      </dd>
      <dt>Status</dt>
      <dd>
        {statusBadge(log.code)} {log.retry_times ? `after ${integer(log.retry_times)} retries` : ""}
      </dd>
      <dt>Tokens</dt>
      <dd>
        {integer(log.usage.input_tokens)} in ({integer(log.usage.cached_tokens ?? 0)} cached) · {integer(log.usage.output_tokens)} out · {pts(log.used_amount)} points
      </dd>
      <dt>Time</dt>
      <dd>
        {duration(log.created_at - log.request_at)} · first byte {duration(log.ttfb_milliseconds)}
      </dd>
      {log.content && (
        <>
          <dt>Error</dt>
          <dd class="mono">{log.content}</dd>
        </>
      )}
    </dl>
);

const Body = ({ title, text, cut, id }) => (
  <section class="body">
    <h3>
      {title} {cut && <Badge tone="warn">cut</Badge>}
    </h3>
    <pre id={id}>{pretty(text) || "(empty)"}</pre>
  </section>
);
