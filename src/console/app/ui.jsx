// The console's shared pieces: loading, empty and error states, a paginated table, badges. Every
// value is rendered as text (preact escapes it); nothing here sets HTML.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";

/** Runs `load` when `deps` change; `reload()` runs it again. An older answer never overwrites a newer one. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ loading: true, error: undefined, data: undefined });
  const turn = useRef(0);
  const run = useCallback(() => {
    const mine = ++turn.current;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => mine === turn.current && setState({ loading: false, error: undefined, data }),
      (error) => mine === turn.current && setState({ loading: false, error, data: undefined }),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

export const Loading = ({ what = "Loading" }) => (
  <div class="state loading" role="status">
    <span class="spinner" aria-hidden="true" />
    {what}…
  </div>
);

export const Empty = ({ children }) => <div class="state empty">{children}</div>;

export const ErrorBox = ({ error, retry }) => (
  <div class="state error" role="alert">
    <strong>Error{error?.status ? ` ${error.status}` : ""}:</strong> <span class="error-message">{error?.message ?? String(error)}</span>
    {retry && (
      <button type="button" class="link" onClick={retry}>
        Try again
      </button>
    )}
  </div>
);

/** Loading, error or the children with the data. */
export function Loaded({ state, what, children }) {
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (state.data === undefined) return <Loading what={what} />;
  return children(state.data);
}

export const Badge = ({ tone, children }) => <span class={`badge ${tone}`}>{children}</span>;

/** Page numbers for a list held in memory. */
export function usePages(rows, size) {
  const [page, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil(rows.length / size));
  const at = Math.min(page, pages - 1);
  return { rows: rows.slice(at * size, at * size + size), page: at, pages, setPage, total: rows.length };
}

export function Pager({ page, pages, total, setPage, unit = "rows" }) {
  if (pages <= 1) return total > 0 ? <div class="pager muted">{total} {unit}</div> : null;
  return (
    <nav class="pager" aria-label="pages">
      <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
        ‹ Prev
      </button>
      <span class="muted">
        Page {page + 1} of {pages} · {total} {unit}
      </span>
      <button type="button" disabled={page >= pages - 1} onClick={() => setPage(page + 1)}>
        Next ›
      </button>
    </nav>
  );
}

/** A table that scrolls sideways on a narrow screen, or (`stack`) shows each row as a card there.
 *  `columns`: [{label, value: row => text, num?, class?, aside? (left out beside an open detail)}] */
export function Table({ columns, rows, rowKey, onRow, selected, foot, label, stack = false }) {
  return (
    <div class={stack ? "table-wrap stack" : "table-wrap"}>
      <table aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th class={[c.num && "num", c.aside && "aside"].filter(Boolean).join(" ") || undefined} scope="col">
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr
              key={rowKey(r)}
              class={`${onRow ? "clickable" : ""} ${selected === rowKey(r) ? "selected" : ""}`}
              onClick={onRow && (() => onRow(r))}
              tabIndex={onRow ? 0 : undefined}
              onKeyDown={onRow && ((e) => e.key === "Enter" && onRow(r))}
            >
              {columns.map((c) => {
                const v = c.value(r);
                // a cut cell keeps its whole text as its title (an attribute preact sets as text)
                return (
                  <td class={[c.num ? "num" : c.class, c.aside && "aside"].filter(Boolean).join(" ") || undefined} data-label={c.label} title={c.class === "cell-text" && typeof v === "string" ? v : undefined}>
                    {v}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
        {foot && (
          <tfoot>
            <tr>
              {columns.map((c, i) => (
                <td class={c.num ? "num" : undefined}>{foot(c, i)}</td>
              ))}
            </tr>
          </tfoot>
        )}
      </table>
    </div>
  );
}

export const Stat = ({ label, value, note }) => (
  <div class="stat">
    <div class="stat-label">{label}</div>
    <div class="stat-value">{value}</div>
    {note && <div class="stat-note muted">{note}</div>}
  </div>
);

/** A select of `[value, label]` pairs. */
export const Select = ({ label, value, options, onChange, name }) => (
  <label class="field">
    <span>{label}</span>
    <select name={name} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      {options.map(([v, l]) => (
        <option value={v}>{l}</option>
      ))}
    </select>
  </label>
);
