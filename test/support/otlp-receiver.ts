// A real OTLP/HTTP trace receiver (docs/tracing.md): decodes the OTLP/JSON the exporter posts to
// /v1/traces into flat spans; it can answer 500 or never answer, as a broken collector does.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; timeMs: number }>;
  links: Array<{ traceId: string; spanId: string }>;
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** every body as received, for a sweep for secrets */
  bodies: string[];
  posts: number;
  mode: "ok" | "fail" | "hang";
  /** resolves once `test(spans)` holds, or rejects past `ms` */
  waitFor(test: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: OtlpValue[] } };
type OtlpAttr = { key: string; value: OtlpValue };

const valueOf = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? v.arrayValue?.values?.map(valueOf);
const attrs = (list: OtlpAttr[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
const ms = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const held: ServerResponse[] = [];
  const receiver: OtlpReceiver = {
    url: "",
    spans: [],
    bodies: [],
    posts: 0,
    mode: "ok",
    async waitFor(test, timeout = 5000) {
      const deadline = Date.now() + timeout;
      while (!test(receiver.spans)) {
        if (Date.now() > deadline) throw new Error(`spans not received: ${receiver.spans.map((s) => s.name).join(", ")}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => new Promise((resolve) => (held.forEach((r) => r.destroy()), server.closeAllConnections(), server.close(() => resolve()))),
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      receiver.posts++;
      if (receiver.mode === "hang") return void held.push(res);
      if (receiver.mode === "fail") return void res.writeHead(500, { "content-type": "application/json" }).end("{}");
      const text = Buffer.concat(chunks).toString("utf8");
      receiver.bodies.push(text);
      decode(text, receiver.spans);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

function decode(text: string, into: ReceivedSpan[]): void {
  const body = JSON.parse(text) as { resourceSpans?: Array<{ resource?: { attributes?: OtlpAttr[] }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }> };
  for (const rs of body.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        into.push({
          traceId: s.traceId as string,
          spanId: s.spanId as string,
          parentSpanId: (s.parentSpanId as string | undefined) ?? "",
          name: s.name as string,
          kind: s.kind as number,
          startMs: ms(s.startTimeUnixNano as string),
          endMs: ms(s.endTimeUnixNano as string),
          attributes: attrs(s.attributes as OtlpAttr[]),
          events: ((s.events as Array<{ name: string; timeUnixNano: string }>) ?? []).map((e) => ({ name: e.name, timeMs: ms(e.timeUnixNano) })),
          links: ((s.links as Array<{ traceId: string; spanId: string }>) ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          resource,
        });
      }
    }
  }
}
