// The cost of request-body size: the same non-stream request with a user message of 0.2 to 200 KB
// of prose, on a 256k-context model (the byte bound proves each fits, so nothing needs counting),
// and 31 KB on the 32k model, where the byte bound fails (31 KB > 30,000 tokens of room) and the
// gateway has to count. The cost per KB is the least-squares slope of CPU time per request over
// body size.
import type { CaseResult } from "./interleave.js";
import { MODELS } from "./models.js";
import { chatBody, prose } from "./chat-request.js";

export const BODY_KB = [0.2, 2, 20, 200];
export const FIT_KB = 31;

export interface BodyCase {
  name: string;
  model: string;
  body: string;
}

export function bodyCases(): BodyCase[] {
  const sized = (kb: number, model: string, name: string): BodyCase => {
    // the prose fills the body up to its size, less the JSON around the message
    const envelope = chatBody(false, { model, content: "" }).length;
    return { name, model, body: chatBody(false, { model, content: prose(Math.max(1, Math.round(kb * 1024) - envelope)) }) };
  };
  return [
    ...BODY_KB.map((kb) => sized(kb, MODELS.large, `${kb} KB body`)),
    sized(FIT_KB, MODELS.chat, `${FIT_KB} KB on 32k model`),
    sized(FIT_KB, MODELS.large, `${FIT_KB} KB on 256k model`),
  ];
}

/** Which cases of the group the floor runs too: the sized ones (the fit pair is Sluice's own). */
export const floorRuns = (c: BodyCase) => BODY_KB.some((kb) => c.name === `${kb} KB body`);

export interface PerKb {
  /** µs of CPU per KB of body, the slope over the sized cases */
  floorUsPerKb?: number;
  sluiceUsPerKb?: number;
  /** Sluice's CPU per request on the 32k model over the same body on the 256k model */
  fitRatio?: number;
}

export function perKbCost(results: CaseResult[], cases: BodyCase[]): PerKb {
  const bytesOf = (name: string) => cases.find((c) => c.name === name)?.body.length ?? Number.NaN;
  const slope = (target: "floor" | "sluice") => {
    const points = results.filter((r) => r.target === target && r.load?.cpuUs !== undefined && BODY_KB.some((kb) => r.name === `${kb} KB body`));
    if (points.length < 2) return undefined;
    return leastSquaresSlope(points.map((p) => [bytesOf(p.name) / 1024, p.load!.cpuUs!]));
  };
  const cpu = (name: string) => results.find((r) => r.target === "sluice" && r.name === name)?.load?.cpuUs;
  const tight = cpu(`${FIT_KB} KB on 32k model`);
  const roomy = cpu(`${FIT_KB} KB on 256k model`);
  return { floorUsPerKb: slope("floor"), sluiceUsPerKb: slope("sluice"), fitRatio: tight !== undefined && roomy ? tight / roomy : undefined };
}

function leastSquaresSlope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxy / sxx;
}
