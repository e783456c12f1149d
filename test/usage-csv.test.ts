// The usage report's CSV against spreadsheets (docs/api.md#usage): end-user names sent by clients —
// a formula, a value holding either separator, quotes, a line break — as the fields the CSV writes, and
// what a spreadsheet that splits on `,` or on `;` (its separator in many locales) makes of the lines:
// no cell that starts a formula.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GLOBAL_KEY, gatewayConfig, postChat, user } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

/** Each end-user name, and the field the CSV must write for it. */
const NAMES: Array<[string, string]> = [
  ["plain", "plain"],
  ["x;=1+1", '"x;=1+1"'],
  ["=SUM(A1)", `"'=SUM(A1)"`],
  ['=HYPERLINK("http://evil.example/")', `"'=HYPERLINK(""http://evil.example/"")"`],
  ["+1", `"'+1"`],
  ["-2+3", `"'-2+3"`],
  ["@cmd", `"'@cmd"`],
  ["\tTAB", `"'\tTAB"`],
  ["\rCR", `"'\rCR"`],
  ['say "hi"', '"say ""hi"""'],
  ["a,b", '"a,b"'],
  ["two\nlines", '"two\nlines"'],
];

let upstream: Upstream;
let gw: StartedGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startGateway(gatewayConfig(upstream.url));
  for (const [name] of NAMES) {
    const res = await postChat(gw.url, { messages: [user("q")], max_tokens: 20, user: name });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  }
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

async function csv(): Promise<string> {
  const res = await fetch(`${gw.url}/api/v1/usage?groupBy=user&format=csv`, { headers: { authorization: `Bearer ${GLOBAL_KEY}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** The cells of a CSV text as a spreadsheet splitting on `sep` reads them (quotes per RFC 4180). */
function cells(text: string, sep: string): string[] {
  const out: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell === "") quoted = true;
    else if (c === sep || c === "\r" || c === "\n") {
      if (c === sep || cell !== "") out.push(cell);
      cell = "";
    } else cell += c;
  }
  if (cell !== "") out.push(cell);
  return out;
}

describe("usage CSV", () => {
  it("writes each end-user name as its field: quoted with either separator, a quote or a line break; a formula quoted behind a '", async () => {
    const text = await csv();
    // every line but the header ends with the five totals, which hold no comma
    const fields = text
      .split("\r\n")
      .slice(1, -1)
      .map((line) => line.split(",").slice(0, -5).join(","));
    // before (the starting commit): 6 of the 12 fields differed — `x;=1+1`, and `'=SUM(A1)`, `'+1`,
    // `'-2+3`, `'@cmd`, `'<tab>TAB` unquoted
    expect(fields.sort()).toEqual(NAMES.map(([, field]) => field).sort());
  });

  it.each([",", ";"])("leaves no cell starting a formula for a spreadsheet that splits on %j", async (sep) => {
    const starts = cells(await csv(), sep).filter((cell) => /^[=+\-@\t\r]/.test(cell));
    // before, split on ";": one such cell, "=1+1,1,11,13,0,0.048" (from `x;=1+1`)
    expect(starts).toEqual([]);
  });
});
