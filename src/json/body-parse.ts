// The three tiers a JSON request body is parsed in (docs/api.md#request-bounds), beside the RawText
// they may leave long message contents as (./raw-text.ts): a small body parsed whole; a large one
// under PIECES_BODY scanned (its long contents kept raw) and parsed in turns of its own; a larger
// one parsed in pieces, a turn of the event loop each. A body refused is a BodyRefused, which the
// HTTP face (http/body.ts) makes the client's 400.
import { JsonScanner } from "./scan.js";
import { JsonPieceError, parseInPieces as inPieces } from "./slices.js";
import { LONG_TEXT, keepRawText, scanLargeBody } from "./raw-text.js";

/** A body that is not JSON the gateway takes: `code` and `message` are the client's 400. */
export class BodyRefused extends Error {
  constructor(
    readonly code: "invalid_json" | "json_too_deep" | "json_too_many_values",
    message: string,
  ) {
    super(message);
  }
}

/** The most objects, arrays and strings (keys counted) a body may hold: a 10,000-message conversation
 *  holds about 50,000 (docs/api.md#request-bounds). */
export const MAX_BODY_VALUES = 100_000;

/** A large body under PIECES_BODY, scanned and parsed whole in turns of their own: a few ms each
 *  at most, where the pieces' own work costs twice the parse (docs/performance.md#the-non-stream-path);
 *  long message contents stay RawTexts when `rawTexts`. */
export async function parseScanned(buf: Buffer, maxDepth: number, rawTexts: boolean): Promise<unknown> {
  await nextTurn(); // its reading was a turn of its own
  const scan = rawTexts ? scanLargeBody(buf, maxDepth) : undefined;
  if (scan && "tooDeep" in scan) throw tooDeep(maxDepth);
  const value = scan && "value" in scan ? scan.value : parseWhole(buf, maxDepth);
  await nextTurn();
  return value;
}

/** Bodies of this many bytes or more are parsed in pieces: one JSON.parse of 256 KiB of the worst
 *  shape (87,000 empty arrays) takes 7 ms, 15 at most (docs/api.md#request-bounds). */
export const PIECES_BODY = 256 * 1024;

export function parseWhole(buf: Buffer, maxDepth: number): unknown {
  if (new JsonScanner(buf).nestingExceeds(maxDepth)) throw tooDeep(maxDepth);
  try {
    return JSON.parse(buf.toString("utf8"));
  } catch {
    throw notJson();
  }
}

/** A body of PIECES_BODY bytes or more, parsed in pieces; long message contents stay RawTexts when `rawTexts`. */
export async function parseInPieces(buf: Buffer, maxDepth: number, rawTexts: boolean): Promise<unknown> {
  await nextTurn(); // its reading was a turn of its own
  try {
    const keep = rawTexts ? keepRawText(buf) : undefined;
    const value = await inPieces(buf, { maxDepth, maxValues: MAX_BODY_VALUES, longString: LONG_TEXT, keep, turn: nextTurn });
    await nextTurn();
    return value;
  } catch (err) {
    if (!(err instanceof JsonPieceError)) throw err;
    if (err.reason === "tooMany") throw new BodyRefused("json_too_many_values", `Request body holds more than ${MAX_BODY_VALUES} objects, arrays and strings.`);
    throw err.reason === "tooDeep" ? tooDeep(maxDepth) : notJson();
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const notJson = () => new BodyRefused("invalid_json", "Request body is not valid JSON.");
const tooDeep = (max: number) => new BodyRefused("json_too_deep", `Request body nests arrays or objects more than ${max} levels deep.`);

