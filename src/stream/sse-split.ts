// Cuts an upstream's SSE bytes into regions of whole events (docs/api.md#streams), line ends made
// `\n`. The bytes of an event not ended yet are kept as the pieces they came in and joined once,
// when the event ends: a long event costs its length once, never once per read. An event still
// not ended past MAX_EVENT_BYTES fails the stream.
import { eventTooLarge } from "../upstream/errors.js";

/** The most an upstream event may hold (docs/api.md#streams). */
export const MAX_EVENT_BYTES = 1024 * 1024;
const LF = 10;
const CR = 13;
const EVENT_END = Buffer.from("\n\n");

export class SseSplitter {
  #parts: Buffer[] = [];
  #bytes = 0;
  /** the last piece ended with a CR, made a LF: a LF opening the next piece is the same line end */
  #cr = false;

  constructor(
    private readonly model: string,
    private readonly maxBytes = MAX_EVENT_BYTES,
  ) {}

  /** Every whole event up to the last one `piece` ends, each with its blank line; undefined when
   *  `piece` ends none. Throws (a 502) when the event under way grows past the bound. */
  push(piece: Buffer): Buffer | undefined {
    const bytes = this.#lineEnds(piece);
    const last = bytes.lastIndexOf(EVENT_END);
    // an event may end across two pieces: a LF closing one, a LF opening the next
    const atStart = bytes[0] === LF && this.#parts.at(-1)?.at(-1) === LF;
    const end = last >= 0 ? last + EVENT_END.length : atStart ? 1 : -1;
    if (end < 0) {
      this.#keep(bytes);
      return undefined;
    }
    const first = atStart ? 1 : bytes.indexOf(EVENT_END) + EVENT_END.length;
    if (this.#bytes + first > this.maxBytes) throw eventTooLarge(this.model, this.maxBytes);
    const whole = end === bytes.length ? bytes : bytes.subarray(0, end);
    const region = this.#parts.length === 0 ? whole : Buffer.concat([...this.#parts, whole]);
    this.#parts = [];
    this.#bytes = 0;
    // a copy: the rest of the read, not the whole read, is what stays
    if (end < bytes.length) this.#keep(Buffer.from(bytes.subarray(end)));
    return region;
  }

  /** The upstream ended: what it left of an unended event; undefined when nothing. */
  finish(): Buffer | undefined {
    const rest = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts);
    this.#parts = [];
    this.#bytes = 0;
    return rest.length > 0 ? rest : undefined;
  }

  #keep(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.#bytes += bytes.length;
    if (this.#bytes > this.maxBytes) throw eventTooLarge(this.model, this.maxBytes);
    this.#parts.push(bytes);
  }

  /** `\r\n` and `\r` made `\n`, byte for byte otherwise (a CR is never part of a UTF-8 character). */
  #lineEnds(piece: Buffer): Buffer {
    let bytes = piece;
    if (this.#cr && bytes[0] === LF) bytes = bytes.subarray(1);
    this.#cr = bytes.at(-1) === CR;
    if (bytes.indexOf(CR) < 0) return bytes;
    return Buffer.from(bytes.toString("latin1").replace(/\r\n?/g, "\n"), "latin1");
  }
}
