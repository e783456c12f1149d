// Keys: every key with its app, limits, spend and what is left of each budget, expiry; create one
// (its key shown once, with a copy button); revoke one. Spend is summed from the usage report by key
// (docs/console.md#keys): lifetime, and since the current day, week or month began in the console's zone.
import { useState } from "preact/hooks";
import { api, query } from "./api.js";
import { ago, dateMinute, integer, periodStart, points as pts } from "./format.js";
import { Badge, Empty, ErrorBox, Loaded, Pager, Table, useLoad, usePages } from "./ui.jsx";

async function spendByKey(from) {
  const report = await api(`/api/v1/usage${query({ groupBy: "key", from: from === undefined ? undefined : new Date(from).toISOString() })}`);
  return new Map(report.groups.map((g) => [g.key, g.points]));
}

async function loadKeys(tz) {
  const { keys } = await api("/api/admin/keys");
  const now = Date.now();
  const periods = [...new Set(keys.filter((k) => k.limits.periodPoints >= 0).map((k) => k.limits.period))];
  const [lifetime, ...byPeriod] = await Promise.all([spendByKey(undefined), ...periods.map((p) => spendByKey(periodStart(p, now, tz)))]);
  const period = new Map(periods.map((p, i) => [p, byPeriod[i]]));
  return keys.map((k) => ({ ...k, spent: lifetime.get(k.name) ?? 0, periodSpent: period.get(k.limits.period)?.get(k.name) ?? 0 }));
}

function status(k) {
  if (k.revokedAt) return <Badge tone="off">revoked</Badge>;
  if (k.expiresAt && Date.parse(k.expiresAt) <= Date.now()) return <Badge tone="bad">expired</Badge>;
  return <Badge tone="ok">active</Badge>;
}

/** "87.7 left of 100 points" with a bar of what is spent (the figure in its title); "no budget" for -1. */
function Budget({ spent, max, unit }) {
  if (max < 0) return <span class="muted">{pts(spent)} spent · no budget</span>;
  const left = Math.max(0, max - spent);
  return (
    <span class="budget" title={`${pts(spent)} spent of ${pts(max)}${unit}`}>
      <span class="budget-text">
        <strong>{pts(left)} left</strong> of {pts(max)}
        {unit}
      </span>
      <span class="meter" aria-hidden="true">
        <span class={`meter-fill ${left <= 0 ? "bad" : left < max * 0.2 ? "warn" : ""}`} style={{ width: `${max > 0 ? Math.min(100, (100 * spent) / max) : 100}%` }} />
      </span>
    </span>
  );
}

export function Keys({ tz }) {
  const keys = useLoad(() => loadKeys(tz), [tz]);
  const [created, setCreated] = useState(undefined);
  const [creating, setCreating] = useState(false);
  return (
    <>
      <div class="page-head">
        <h1>Keys</h1>
        {!creating && !created && (
          <button type="button" class="primary" id="new-key-button" onClick={() => setCreating(true)}>
            New key
          </button>
        )}
      </div>
      {created && <Reveal made={created} done={() => setCreated(undefined)} />}
      {creating && !created && <CreateKey apps={appsOf(keys.data)} cancel={() => setCreating(false)} made={(k) => (setCreated(k), setCreating(false), keys.reload())} />}
      <section class="card">
        <h2>All keys</h2>
        <Loaded state={keys} what="Loading keys">
          {(list) => (list.length === 0 ? <Empty>No keys yet.</Empty> : <KeyTable list={list} tz={tz} changed={keys.reload} />)}
        </Loaded>
      </section>
    </>
  );
}

const appsOf = (list) => [...new Set((list ?? []).map((k) => k.appId).filter(Boolean))].sort();

function KeyTable({ list, tz, changed }) {
  const pages = usePages(list, 20);
  return (
    <>
      <Table
        label="keys"
        stack
        rowKey={(k) => k.name}
        rows={pages.rows}
        columns={[
          {
            label: "Name",
            value: (k) => (
              <span class="key-name">
                {k.name}
                <span class="muted small">{k.source === "config" ? "config.json" : `created ${dateMinute(Date.parse(k.createdAt), tz)}`}</span>
              </span>
            ),
          },
          { label: "Kind", class: "nowrap", value: (k) => `${k.kind}${k.appId ? ` · ${k.appId}` : ""}` },
          { label: "Status", value: status },
          { label: "Budget", value: (k) => <Budget spent={k.spent} max={k.limits.maxUsagePoints} unit=" points" /> },
          { label: "Period budget", value: (k) => (k.limits.periodPoints < 0 ? <span class="muted">none</span> : <Budget spent={k.periodSpent} max={k.limits.periodPoints} unit={` a ${k.limits.period}`} />) },
          { label: "Rate", class: "nowrap", value: (k) => [k.limits.qpm ? `${integer(k.limits.qpm)} QPM` : "", k.limits.tpm ? `${integer(k.limits.tpm)} TPM` : ""].filter(Boolean).join(" · ") || "–" },
          { label: "Expires", class: "nowrap", value: (k) => (k.expiresAt ? dateMinute(Date.parse(k.expiresAt), tz) : "never") },
          { label: "Last used", class: "nowrap", value: (k) => (k.lastUsedAt ? <span title={dateMinute(Date.parse(k.lastUsedAt), tz)}>{ago(Date.parse(k.lastUsedAt))}</span> : "never") },
          { label: "", value: (k) => (k.source === "api" && !k.revokedAt ? <Revoke name={k.name} changed={changed} /> : null) },
        ]}
      />
      <Pager {...pages} unit="keys" />
    </>
  );
}

function Revoke({ name, changed }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState(undefined);
  async function revoke() {
    try {
      await api(`/api/admin/keys/${encodeURIComponent(name)}`, { method: "DELETE" });
      changed();
    } catch (err) {
      setError(err);
    }
  }
  if (error) return <ErrorBox error={error} />;
  if (!asking)
    return (
      <button type="button" class="danger small" onClick={() => setAsking(true)}>
        Revoke
      </button>
    );
  return (
    <span class="confirm">
      Revoke {name}?{" "}
      <button type="button" class="danger small" onClick={revoke}>
        Yes, revoke
      </button>{" "}
      <button type="button" class="small" onClick={() => setAsking(false)}>
        No
      </button>
    </span>
  );
}

const NUMBER_FIELDS = [
  ["maxUsagePoints", "Budget (points, -1 none)", "-1"],
  ["periodPoints", "Period budget (-1 none)", "-1"],
  ["qpm", "QPM (0 none)", "0"],
  ["tpm", "TPM (0 none)", "0"],
];

function CreateKey({ apps, made, cancel }) {
  const [form, setForm] = useState({ name: "", kind: "app", appId: apps[0] ?? "", period: "day", expiresAt: "", maxUsagePoints: "-1", periodPoints: "-1", qpm: "0", tpm: "0" });
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const set = (field) => (e) => setForm({ ...form, [field]: e.currentTarget.value });
  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    const body = { name: form.name.trim(), kind: form.kind, period: form.period };
    if (form.kind === "app") body.appId = form.appId.trim();
    for (const [field] of NUMBER_FIELDS) body[field] = Number(form[field]);
    if (form.expiresAt) body.expiresAt = new Date(form.expiresAt).toISOString();
    try {
      made(await api("/api/admin/keys", { method: "POST", body }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="card create-key" onSubmit={submit} id="create-key">
      <h2>Create a key</h2>
      <KeyFields form={form} set={set} apps={apps} />
      {error && <ErrorBox error={error} />}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Creating…" : "Create key"}
        </button>
        <button type="button" onClick={cancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The new key's fields; `set(field)` is an input's handler. */
const KeyFields = ({ form, set, apps }) => (
    <div class="form-grid">
      <label class="field">
        <span>Name</span>
        <input name="name" required value={form.name} onInput={set("name")} placeholder="alice-laptop" />
      </label>
      <label class="field">
        <span>Kind</span>
        <select name="kind" value={form.kind} onChange={set("kind")}>
          <option value="app">app (calls models)</option>
          <option value="global">global (reads usage)</option>
        </select>
      </label>
      {form.kind === "app" && (
        <label class="field">
          <span>App</span>
          <input name="appId" list="known-apps" required value={form.appId} onInput={set("appId")} />
          <datalist id="known-apps">
            {apps.map((a) => (
              <option value={a} />
            ))}
          </datalist>
        </label>
      )}
      {NUMBER_FIELDS.map(([field, label]) => (
        <label class="field">
          <span>{label}</span>
          <input name={field} type="number" step="any" value={form[field]} onInput={set(field)} />
        </label>
      ))}
      <label class="field">
        <span>Period</span>
        <select name="period" value={form.period} onChange={set("period")}>
          <option value="day">day</option>
          <option value="week">week</option>
          <option value="month">month</option>
        </select>
      </label>
      <label class="field">
        <span>Expires (your clock)</span>
        <input name="expiresAt" type="datetime-local" value={form.expiresAt} onInput={set("expiresAt")} />
      </label>
    </div>
);

/** The new key, this once: when it is dismissed the page forgets it. */
function Reveal({ made, done }) {
  const [copied, setCopied] = useState(undefined);
  async function copy() {
    try {
      await navigator.clipboard.writeText(made.key);
      setCopied("Copied");
    } catch {
      setCopied("Copy refused: select the key and copy it by hand");
    }
  }
  return (
    <section class="card reveal" role="alert" id="reveal">
      <h2>Key {made.name} created</h2>
      <p>Copy it now: it is shown only this once and cannot be read again.</p>
      <div class="reveal-row">
        <code class="secret" id="new-key">
          {made.key}
        </code>
        <button type="button" class="primary" onClick={copy} id="copy-key">
          {copied === "Copied" ? "Copied ✓" : "Copy"}
        </button>
      </div>
      {copied && copied !== "Copied" && <p class="muted">{copied}</p>}
      <button type="button" onClick={done} id="reveal-done">
        I have copied it
      </button>
    </section>
  );
}
