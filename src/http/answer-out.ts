// Where an answer's bytes go (docs/architecture.md#taps): the Node response itself, or — when a tap
// reads the answer (body logging) — a writer that tells the tap each chunk and passes it on. Nothing
// patches the response's own `write`/`end`.
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import { nodeResponse, writeToNode, Written, type Reply } from "./node.js";

/** What the answer steps and the kinds' sinks use of a response: Node's ServerResponse is one. */
export interface AnswerOut {
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  readonly writableCorked: number;
  write(chunk: string | Buffer): boolean;
  writeHead(status: number, headers?: Record<string, string | number>): unknown;
  cork(): void;
  destroy(): void;
  once(event: "drain", listener: () => void): unknown;
  off(event: "drain", listener: () => void): unknown;
}

/** Told every chunk of an answer as it is written (a whole answer once, a stream chunk by chunk). */
export interface AnswerListener {
  written(chunk: string | Buffer): void;
  /** the answer is over (ended, or its client left): its status and content type */
  closed(status: number, contentType: string): void;
}

/** Passes every write to the response and tells `listener` of it. */
export class TeeOut implements AnswerOut {
  constructor(
    private readonly res: ServerResponse,
    private readonly listener: AnswerListener,
  ) {}
  get destroyed(): boolean {
    return this.res.destroyed;
  }
  get writableEnded(): boolean {
    return this.res.writableEnded;
  }
  get writableCorked(): number {
    return this.res.writableCorked;
  }
  write(chunk: string | Buffer): boolean {
    this.listener.written(chunk);
    return this.res.write(chunk);
  }
  writeHead(status: number, headers?: Record<string, string | number>): unknown {
    return this.res.writeHead(status, headers);
  }
  cork(): void {
    this.res.cork();
  }
  destroy(): void {
    this.res.destroy();
  }
  once(event: "drain", listener: () => void): unknown {
    return this.res.once(event, listener);
  }
  off(event: "drain", listener: () => void): unknown {
    return this.res.off(event, listener);
  }
}

interface Teed {
  answerTee?: AnswerListener;
}

/** From now on, the answer of `event` is written through `listener` (the route wrapper writes a
 *  Response reply itself, through it: writeThrough). */
export function teeAnswer(event: H3Event, listener: AnswerListener): void {
  const res = nodeResponse(event);
  if (!res) return;
  (event.context as Teed).answerTee = listener;
  // "close" comes once, whether the answer ended or the client left
  res.once("close", () => {
    // nothing of the request stays reachable from the event once the answer is over
    (event.context as Teed).answerTee = undefined;
    listener.closed(res.statusCode, String(res.getHeader("content-type") ?? ""));
  });
}

/** Whether a tap reads `event`'s answer. */
export const isTeed = (event: H3Event): boolean => (event.context as Teed).answerTee !== undefined;

/** The writer of `event`'s answer: the response, or a tee when a tap reads the answer. */
export function answerOut(event: H3Event): AnswerOut | undefined {
  const res = nodeResponse(event);
  if (!res) return undefined;
  const tee = (event.context as Teed).answerTee;
  return tee ? new TeeOut(res, tee) : res;
}

/** A Response reply written to the Node response through the request's tee, if it has one (a
 *  whole answer or an error); any other reply as it is. */
export async function writeThrough(event: H3Event, reply: Reply): Promise<Reply> {
  const tee = (event.context as Teed).answerTee;
  if (!tee || reply instanceof Written || !(reply instanceof Response)) return reply;
  const res = nodeResponse(event);
  if (!res) return reply;
  const body = reply.body ? Buffer.from(await reply.arrayBuffer()) : undefined;
  return writeToNode(event, (r) => {
    if (r.destroyed) return;
    const headers: Record<string, string> = {};
    reply.headers.forEach((value, name) => (headers[name] = value));
    if (body) headers["content-length"] = String(body.length);
    r.writeHead(reply.status, headers);
    if (!body) return;
    tee.written(body);
    r.write(body);
  });
}
