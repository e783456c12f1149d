// Liveness and readiness (docs/operations.md#health-checks): /healthz says the process answers; /readyz says it can
// serve, i.e. the store (and the cluster state's Redis, when there is one) answers a ping within a second.

export interface HealthDeps {
  /** resolves when the store is reachable */
  ping: () => Promise<void>;
  /** resolves when the state shared by instances is reachable */
  clusterPing?: () => Promise<void>;
}

export interface Health {
  live(): Response;
  ready(): Promise<Response>;
}

const READY_TIMEOUT_MS = 1_000;

export function createHealth(deps: HealthDeps): Health {
  return {
    live: () => json(200, { status: "ok" }),
    async ready() {
      const [store, cluster] = await Promise.all([
        settlesWithin(deps.ping, READY_TIMEOUT_MS),
        deps.clusterPing ? settlesWithin(deps.clusterPing, READY_TIMEOUT_MS) : true,
      ]);
      if (!store) return json(503, { status: "unavailable", reason: "store unreachable" });
      if (!cluster) return json(503, { status: "unavailable", reason: "cluster state (Redis) unreachable" });
      return json(200, { status: "ready" });
    },
  };
}

/** true when `task` resolves before the deadline; a rejection or a hang both mean false */
async function settlesWithin(task: () => Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(task)
        .then(() => true, () => false),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function json(status: number, body: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  });
}
