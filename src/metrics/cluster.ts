// Metrics of an instance run as node:cluster workers (`server.workers` > 1). Each worker keeps its
// own registry; a scrape of /metrics, whichever worker the port hands it to, answers for the whole
// instance: the worker asks the primary, which collects every worker's registry and merges them with
// prom-client's AggregatorRegistry (counters and histograms summed; gauges by the aggregator their
// family names, summed unless said otherwise).
//
// Aggregated rather than labelled per worker: Prometheus scrapes one port and reaches one worker at
// random, so per-worker series would only be complete if every worker answered for all anyway; and
// merged, the instance reads as one process did, so the dashboard's queries and the alert rules stay
// right unchanged. A worker that exits leaves its counters and histograms (as last collected) in the
// instance's totals, so a replaced worker never looks like a counter reset to rate(); what it counted
// after the last collection is lost, as it would be with a crashed process.
import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";

/** worker → primary: render the instance's metrics; primary → worker: the text, or why not */
const ASK = "sluice:metrics";
const ANSWER = "sluice:metrics-answer";
/** worker → primary once its registry exists: collect me */
const JOIN = "sluice:metrics-join";
/** primary → worker: your registry, please; worker → primary: here it is */
const COLLECT = "sluice:metrics-collect";
const PART = "sluice:metrics-part";
const COLLECT_TIMEOUT_MS = 5_000;
/** past the primary's own wait for the workers */
const ANSWER_TIMEOUT_MS = COLLECT_TIMEOUT_MS + 2_000;
/** retired workers' counts are merged into one once there are this many */
const FOLD_AT = 4;
/** families that only grow: a gone worker's share stays in the instance's totals */
const COUNTS = new Set(["counter", "histogram"]);

type Part = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;
interface Message {
  type: string;
  id: number;
  text?: string;
  error?: string;
  metrics?: Part;
}

/** In the primary: collects the workers' registries when one of them is scraped. */
export function serveInstanceMetrics(): void {
  const members = new Map<number, { worker: Worker; last?: Part }>();
  const collections = new Map<number, { parts: Map<number, Part>; waiting: Set<number>; finish(): void }>();
  let retired: Part[] = [];
  let folding = false;
  let nextId = 0;

  function collect(): Promise<string> {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        collections.delete(id);
        reject(new Error("a worker did not answer"));
      }, COLLECT_TIMEOUT_MS);
      const collection = {
        parts: new Map<number, Part>(),
        waiting: new Set(members.keys()),
        finish() {
          if (collection.waiting.size > 0 || !collections.delete(id)) return;
          clearTimeout(timer);
          AggregatorRegistry.aggregate([...retired, ...collection.parts.values()]).metrics().then(resolve, reject);
        },
      };
      collections.set(id, collection);
      for (const { worker } of members.values()) worker.send({ type: COLLECT, id }, (err: Error | null) => err && leave(worker.id));
      collection.finish();
    });
  }

  /** A worker gone: what it counted stays in the totals; what it measured (gauges) goes. */
  function leave(workerId: number): void {
    const member = members.get(workerId);
    if (!member) return;
    members.delete(workerId);
    if (member.last) retired.push(member.last.filter((family) => COUNTS.has(String(family.type))));
    for (const collection of collections.values()) {
      collection.parts.delete(workerId);
      collection.waiting.delete(workerId);
      collection.finish();
    }
    if (retired.length >= FOLD_AT && !folding) void fold();
  }
  async function fold(): Promise<void> {
    folding = true;
    const folded = retired;
    try {
      const merged = await AggregatorRegistry.aggregate(folded).getMetricsAsJSON();
      retired = [merged, ...retired.slice(folded.length)];
    } finally {
      folding = false;
    }
  }

  cluster.on("message", (worker, message: Partial<Message>) => {
    if (message?.type === JOIN) members.set(worker.id, { worker });
    if (message?.type === PART && message.metrics) {
      const member = members.get(worker.id);
      if (member) member.last = message.metrics;
      const collection = collections.get(message.id!);
      if (!collection?.waiting.delete(worker.id)) return;
      collection.parts.set(worker.id, message.metrics);
      collection.finish();
    }
    if (message?.type === ASK) {
      const reply = (answer: Pick<Message, "text" | "error">) => {
        if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer }, () => {});
      };
      collect().then((text) => reply({ text }), (err: Error) => reply({ error: err.message }));
    }
  });
  cluster.on("exit", (worker) => leave(worker.id));
}

/** In a worker: offers `registry` to the primary's collections; returns the render of the whole
 *  instance (rejects when the primary cannot collect it). */
export function joinInstanceMetrics(registry: Registry): () => Promise<string> {
  const pending = new Map<number, (answer: Pick<Message, "text" | "error">) => void>();
  const send = (message: Message, failed: (err: Error) => void) => process.send!(message, undefined, undefined, (err) => err && failed(err));
  process.on("message", (message: Partial<Message>) => {
    if (message?.type === ANSWER) pending.get(message.id!)?.(message);
    if (message?.type === COLLECT) {
      void registry.getMetricsAsJSON().then((metrics) => send({ type: PART, id: message.id!, metrics }, () => {}));
    }
  });
  send({ type: JOIN, id: 0 }, () => {});
  let nextId = 0;
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const settle = (answer: Pick<Message, "text" | "error">) => {
        clearTimeout(timer);
        pending.delete(id);
        if (answer.text !== undefined) resolve(answer.text);
        else reject(new Error(`the instance's metrics: ${answer.error ?? "no answer"}`));
      };
      const timer = setTimeout(() => settle({ error: "the primary did not answer" }), ANSWER_TIMEOUT_MS);
      pending.set(id, settle);
      send({ type: ASK, id }, (err) => settle({ error: err.message }));
    });
}
