// Relays an upstream SSE byte stream to the client. Bytes pass through untouched unless a region
// carries something the gateway must act on (usage, a finish reason, an error, `[DONE]`), or the
// client asked for FastGPT's event stream; only those regions are parsed. The answer's text is
// recovered from the kept regions afterwards, and only when something needs it.
import { badUpstreamReply, UpstreamError } from "../upstream/errors.js";
import type { Usage } from "../upstream/types.js";

const EVENT_END = Buffer.from("\n\n");
const CR = 13;
/** Substrings that make an event worth parsing; a false positive only costs a parse. The finish
 *  reason is not among them: it is read afterwards with the text, and only when needed. */
const MARKERS = ['"usage"', "[DONE]", '"error"'].map((m) => Buffer.from(m));
const ANSWER_EVENT = Buffer.from("event: answer\n");

/** The earliest position of any marker at or after `from`, or -1. */
function firstMarker(bytes: Buffer, from: number): number {
  let first = -1;
  for (const m of MARKERS) {
    const at = bytes.indexOf(m, from);
    if (at >= 0 && (first < 0 || at < first)) first = at;
  }
  return first;
}
const CONTENT_KEYS = ['"content":"', '"content": "'].map((m) => Buffer.from(m));

export interface RelayOptions {
  /** FastGPT event stream: every chunk as `event: answer` */
  detail: boolean;
  /** the client asked for the usage chunk */
  includeUsage: boolean;
  model: string;
  /** writes to the client; false asks the caller to wait for drain */
  write: (bytes: string | Buffer) => boolean;
  onFirstContent: () => void;
}

export interface SseRelay {
  /** Feeds upstream bytes; returns what the client write returned (false: apply backpressure). */
  push(chunk: Buffer): boolean;
  /** The upstream ended: anything left unterminated is taken as a last event. */
  finish(): void;
  readonly done: boolean;
  readonly usage: Usage | undefined;
  /** The answer's text, parsed from every relayed region (memoized). */
  text(): string;
  /** The last finish reason the upstream gave, parsed with the text; undefined when none. */
  finishReason(): string | undefined;
}

interface ChunkShape {
  choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null }>;
  usage?: Usage | null;
  error?: unknown;
}

export function createSseRelay(opts: RelayOptions): SseRelay {
  const kept: Buffer[] = [];
  let pending: Buffer | undefined;
  let done = false;
  let usage: Usage | undefined;
  let firstContent = false;
  let collected: Collected | undefined;

  function push(chunk: Buffer): boolean {
    if (done) return true; // after [DONE]: the rest is drained, not relayed
    let data = pending ? Buffer.concat([pending, chunk]) : chunk;
    if (data.indexOf(CR) >= 0) data = Buffer.from(data.toString("utf8").replace(/\r\n?/g, "\n"));
    const cut = data.lastIndexOf(EVENT_END);
    if (cut < 0) {
      pending = data;
      return true;
    }
    const end = cut + EVENT_END.length;
    pending = end === data.length ? undefined : Buffer.from(data.subarray(end));
    return relayRegion(end === data.length ? data : data.subarray(0, end));
  }

  function relayRegion(region: Buffer): boolean {
    kept.push(region);
    if (!firstContent && CONTENT_KEYS.some((k) => hasNonEmptyValue(region, k))) {
      firstContent = true;
      opts.onFirstContent();
    }
    if (opts.detail) return writeAll(detailEvents(region));
    // Bytes up to the event holding the first marker pass whole; that event is parsed; repeat.
    const out: Buffer[] = [];
    for (let start = 0; start < region.length && !done; ) {
      const marker = firstMarker(region, start);
      if (marker < 0) {
        out.push(start === 0 ? region : region.subarray(start));
        break;
      }
      const before = region.lastIndexOf(EVENT_END, marker);
      const eventStart = before < start ? start : before + EVENT_END.length;
      const eventEnd = region.indexOf(EVENT_END, marker) + EVENT_END.length;
      if (eventStart > start) out.push(region.subarray(start, eventStart));
      const forward = inspectEvent(region.toString("utf8", eventStart, eventEnd));
      if (forward !== undefined) out.push(Buffer.from(`data: ${forward}\n\n`));
      start = eventEnd;
    }
    return writeAll(out);
  }

  /** FastGPT's event stream: every event gets `event: answer`, so every event is looked at. */
  function detailEvents(region: Buffer): Buffer[] {
    const out: Buffer[] = [];
    for (let start = 0; start < region.length && !done; ) {
      const end = region.indexOf(EVENT_END, start) + EVENT_END.length;
      const event = region.subarray(start, end);
      start = end;
      if (firstMarker(event, 0) < 0) {
        out.push(ANSWER_EVENT, event);
        continue;
      }
      const forward = inspectEvent(event.toString("utf8"));
      if (forward !== undefined) out.push(Buffer.from(`event: answer\ndata: ${forward}\n\n`));
    }
    return out;
  }

  function writeAll(out: Buffer[]): boolean {
    if (out.length === 0) return true;
    return opts.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  }

  /** Acts on one marked event; returns the data the client gets, or undefined for none. */
  function inspectEvent(block: string): string | undefined {
    const data = dataOf(block);
    if (data === undefined) return undefined;
    if (data === "[DONE]") {
      done = true;
      return undefined;
    }
    const chunk = parseChunk(data, opts.model);
    if (!chunk.usage) return data;
    usage = chunk.usage;
    if (opts.includeUsage) return data;
    if (!chunk.choices || chunk.choices.length === 0) return undefined;
    delete chunk.usage;
    return JSON.stringify(chunk);
  }

  return {
    push,
    finish() {
      if (done || !pending) return;
      const rest = pending;
      pending = undefined;
      push(Buffer.concat([rest, EVENT_END]));
    },
    get done() {
      return done;
    },
    get usage() {
      return usage;
    },
    text() {
      return (collected ??= collect(kept)).text;
    },
    finishReason() {
      return (collected ??= collect(kept)).finishReason;
    },
  };
}

/** The `data:` payload of one SSE event (several data lines join with newlines); undefined if none. */
function dataOf(block: string): string | undefined {
  let data: string | undefined;
  for (const line of block.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}

function parseChunk(data: string, model: string): ChunkShape {
  let chunk: ChunkShape;
  try {
    chunk = JSON.parse(data) as ChunkShape;
  } catch {
    throw badUpstreamReply(model);
  }
  if (chunk?.error) {
    // its text may carry the upstream's internals, so the client gets less
    throw new UpstreamError(502, "upstream_error", `The model server for ${model} reported an error during the answer.`, "http_error");
  }
  return chunk;
}

interface Collected {
  text: string;
  finishReason: string | undefined;
}

function collect(regions: Buffer[]): Collected {
  const out: Collected = { text: "", finishReason: undefined };
  for (const region of regions) {
    for (const block of region.toString("utf8").split("\n\n")) {
      const data = dataOf(block);
      if (data === undefined || data === "[DONE]") continue;
      try {
        const choice = (JSON.parse(data) as ChunkShape).choices?.[0];
        out.text += choice?.delta?.content ?? "";
        if (choice?.finish_reason) out.finishReason = choice.finish_reason;
      } catch {
        // relayed regions were valid or already failed the stream
      }
    }
  }
  return out;
}

/** Whether `key` occurs followed by a value that is not the empty string. */
function hasNonEmptyValue(region: Buffer, key: Buffer): boolean {
  for (let at = region.indexOf(key); at >= 0; at = region.indexOf(key, at + 1)) {
    if (region[at + key.length] !== 0x22) return true; // 0x22: the closing quote of ""
  }
  return false;
}
