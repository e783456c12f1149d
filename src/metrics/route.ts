// The /metrics endpoint: the Prometheus text of a metrics registry, behind an optional bearer token
// (`server.metricsToken`) so a gateway reachable from outside does not publish its traffic figures.
import { createHash, timingSafeEqual } from "node:crypto";
import { GatewayError, errorResponse } from "../http/errors.js";
import { OPENMETRICS_CONTENT_TYPE, wantsOpenMetrics } from "./openmetrics.js";
import type { Metrics } from "./prometheus.js";

export async function metricsResponse(
  metrics: Pick<Metrics, "render" | "contentType" | "renderOpenMetrics">,
  token: string | undefined,
  authorization: string | null,
  accept: string | null = null,
): Promise<Response> {
  if (token) {
    const given = bearer(authorization);
    if (given === undefined) return unauthorized("missing_api_key", "Metrics require an Authorization: Bearer <token> header.");
    if (!sameSecret(given, token)) return unauthorized("invalid_api_key", "Invalid metrics token.");
  }
  let text: string;
  // OpenMetrics when asked for, as Prometheus does by default: it carries the exemplars
  const open = wantsOpenMetrics(accept) ? metrics.renderOpenMetrics : undefined;
  try {
    text = await (open ? open() : metrics.render());
  } catch {
    // a worker's scrape when the instance's other workers cannot be collected (src/metrics/cluster.ts):
    // a failed scrape, never a partial one whose counters would seem to go back
    return errorResponse(new GatewayError(503, "metrics_unavailable", "The instance's metrics could not be collected from every worker; retry shortly.", { type: "api_error", headers: { "Retry-After": "1" } }));
  }
  return new Response(text, {
    status: 200,
    headers: { "content-type": open ? OPENMETRICS_CONTENT_TYPE : metrics.contentType, "cache-control": "no-store" },
  });
}

function unauthorized(code: string, message: string): Response {
  return errorResponse(new GatewayError(401, code, message, { headers: { "www-authenticate": "Bearer" } }));
}

function bearer(header: string | null): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1];
}

/** Hashing first gives equal-length inputs, so the comparison time reveals nothing, not even the length. */
function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}
