// The soak's verdict: what each client saw, what each upstream attempt produced and what the
// gateway billed, matched per request id (the id leads the user message the upstream reads and is
// the chatId of the usage row). Billing must equal production exactly, except for client aborts
// (see `checkAbort`); every error a client saw must be one it caused, an upstream cut relayed as
// an error event, or a request every attempt of which failed before its headers.
import type { ClientRecord } from "./load.js";
import type { AttemptRecord } from "./upstream.js";

export interface UsageRow {
  id: number;
  status: number;
  input: number;
  output: number;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface Verdict {
  checks: Check[];
  figures: Array<[string, string]>;
}

const BEFORE_HEADERS = new Set(["500", "reset", "429"]);
const EXAMPLES = 5;

/** `circuitOpenSkips`: channels skipped for an open breaker (the gateway's own count), the only
 *  reason a refused request may have made fewer attempts than there are channels. */
export function compare(clients: ClientRecord[], attempts: AttemptRecord[], rows: UsageRow[], channels: number, maxAttempts: number, circuitOpenSkips: number): Verdict {
  const byId = new Map<number, AttemptRecord[]>();
  for (const a of attempts) byId.set(a[0], [...(byId.get(a[0]) ?? []), a]);
  const rowsById = new Map<number, UsageRow[]>();
  for (const r of rows) rowsById.set(r.id, [...(rowsById.get(r.id) ?? []), r]);
  const sent = new Set(clients.map((c) => c.id));

  const problems = { unexplained: [] as string[], billing: [] as string[], twice: [] as string[], retriedAfterHeaders: [] as string[] };
  const tally = { produced: 0, billed: 0, received: 0, abortGap: 0, abortOutput: 0, refusedSingle: 0, failedOver: 0 };
  const outcomes = new Map<string, number>();
  const refusals = new Map<string, number>();
  /** refusals after fewer attempts than channels, by how the last attempt failed */
  const shortBy = new Map<string, number>();

  for (const c of clients) {
    outcomes.set(c.outcome, (outcomes.get(c.outcome) ?? 0) + 1);
    const tried = byId.get(c.id) ?? [];
    const answering = tried.filter((a) => !BEFORE_HEADERS.has(a[1]));
    const mine = rowsById.get(c.id) ?? [];
    const row = mine[0];
    const note = (list: string[], why: string) => list.length < EXAMPLES && list.push(`#${c.id} ${why}`);
    if (answering.length > 1) note(problems.retriedAfterHeaders, `answered by ${answering.length} attempts`);
    if (mine.length > 1) note(problems.twice, `${mine.length} usage rows`);
    if (answering.length === 1 && tried.length > 1) tally.failedOver++;
    const answer = answering[0];
    tally.received += c.received;
    if (answer && c.outcome !== "dropped") tally.produced += answer[2] + answer[3];
    if (row) tally.billed += row.input + row.output;

    switch (c.outcome) {
      case "ok":
      case "cut": {
        // a whole answer, or one the upstream cut: everything the upstream produced was relayed and billed
        // a cut is the channel's fault: CONTRACTS §9 says 502 upstream_error, in the event and the row
        const cut = c.outcome === "cut";
        if (answer?.[1] !== c.outcome) note(problems.unexplained, `${c.outcome} (${c.code ?? ""}) but the upstream says ${answer?.[1] ?? "no answer"}`);
        else if (cut && (c.code !== "upstream_error" || row?.status !== 502)) note(problems.unexplained, `cut told as ${c.code}, usage row status ${row?.status}`);
        else if (!row || row.input !== answer[2] || row.output !== answer[3] || c.received !== answer[3]) {
          note(problems.billing, `${c.outcome}: produced ${answer[2]}+${answer[3]}, received ${c.received}, billed ${row ? `${row.input}+${row.output} (${row.status})` : "nothing"}`);
        }
        break;
      }
      case "aborted":
        if (!answer || !row || !checkAbort(c, answer, row)) {
          note(problems.billing, `abort: produced ${answer ? `${answer[2]}+${answer[3]}` : "nothing"}, received ${c.received}, billed ${row ? `${row.input}+${row.output} (${row.status})` : "nothing"}`);
        } else {
          tally.abortGap += answer[3] - row.output;
          tally.abortOutput += answer[3];
        }
        break;
      case "refused": {
        const key = `${c.status} ${c.code}`;
        refusals.set(key, (refusals.get(key) ?? 0) + 1);
        if (answer) note(problems.unexplained, `refused ${key} although the upstream answered (${answer[1]})`);
        if (row && row.input + row.output > 0) note(problems.billing, `refused ${key} but billed ${row.input}+${row.output}`);
        if (tried.length < Math.min(channels, maxAttempts)) {
          tally.refusedSingle++;
          const last = tried.at(-1)?.[1] ?? "no attempt";
          shortBy.set(last, (shortBy.get(last) ?? 0) + 1);
        }
        break;
      }
      case "dropped":
        // a race on the connection, not a request the gateway took on: it must have billed nothing
        if (row && row.input + row.output > 0) note(problems.billing, `dropped (${c.code}) but billed ${row.input}+${row.output}`);
        break;
      default:
        note(problems.unexplained, `${c.outcome} ${c.code ?? ""}`);
    }
  }
  const strays = rows.filter((r) => !sent.has(r.id)).length;

  const count = (o: string) => outcomes.get(o) ?? 0;
  const preHeaderFailures = attempts.filter((a) => BEFORE_HEADERS.has(a[1])).length;
  const gapShare = tally.abortOutput > 0 ? ((100 * tally.abortGap) / tally.abortOutput).toFixed(2) : "0";
  const checks: Check[] = [
    {
      name: "every client error explained",
      ok: problems.unexplained.length === 0 && count("truncated") + count("transport") + count("timeout") === 0,
      detail: problems.unexplained.join("; ") || `truncated ${count("truncated")}, transport ${count("transport")}, timeout ${count("timeout")}`,
    },
    {
      name: "failures before headers failed over",
      ok: tally.refusedSingle <= circuitOpenSkips,
      detail:
        `${tally.refusedSingle} refused after fewer than ${Math.min(channels, maxAttempts)} attempts ${[...shortBy].map(([k, n]) => `[last ${k}: ${n}]`).join(" ")}; ` +
        `${circuitOpenSkips} channel skips for an open breaker`,
    },
    {
      name: "connections dropped before an answer < 0.1 %",
      ok: count("dropped") <= clients.length / 1000,
      detail: `${count("dropped")} (${[...new Set(clients.filter((c) => c.outcome === "dropped").map((c) => c.code))].join(", ") || "-"}): a client would retry them`,
    },
    { name: "billed = produced (per request)", ok: problems.billing.length === 0, detail: problems.billing.join("; ") || "exact for answers and cuts; aborts within [received, produced]" },
    { name: "billed once", ok: problems.twice.length === 0 && strays === 0, detail: problems.twice.join("; ") || `${strays} usage rows of unknown requests` },
    { name: "no retry after the first byte", ok: problems.retriedAfterHeaders.length === 0, detail: problems.retriedAfterHeaders.join("; ") || "-" },
  ];
  const figures: Array<[string, string]> = [
    ["requests (stream / whole)", `${clients.length} (${clients.filter((c) => c.stream).length} / ${clients.filter((c) => !c.stream).length})`],
    ["  ok", String(count("ok"))],
    ["  client aborts", String(count("aborted"))],
    ["  upstream cuts relayed as error events", String(count("cut"))],
    ["  refused: every attempt failed before headers", `${count("refused")} ${[...refusals].map(([k, n]) => `[${k}: ${n}]`).join(" ")}`],
    ["  failed over and answered", String(tally.failedOver)],
    ["upstream attempts (failed before headers)", `${attempts.length} (${preHeaderFailures})`],
    ["tokens produced by answering attempts", String(tally.produced)],
    ["tokens billed (usage rows, in+out)", String(tally.billed)],
    ["tokens received by clients (output)", String(tally.received)],
    ["abort output in flight, unbilled", `${tally.abortGap} of ${tally.abortOutput} (${gapShare} %)`],
  ];
  return { checks, figures };
}

/**
 * A client abort is billed between what the client received and what the upstream produced. Both
 * bounds are inherent: the gateway bills what it relayed (every chunk the client got, plus any it
 * relayed into the closing socket), while chunks the upstream wrote after the gateway stopped
 * reading — in flight in socket buffers between the client leaving and the upstream being aborted —
 * were produced but never reached the gateway. The prompt is exact.
 */
function checkAbort(c: ClientRecord, answer: AttemptRecord, row: UsageRow): boolean {
  return row.input === answer[2] && row.output >= c.received && row.output <= answer[3];
}
