// CORS for browser apps on /v1/* and /api/v1/* (docs/api.md#cors): preflight answered 204, and the
// allowed origin on every answer and error. No cookies are used, so no credentials flag.
import type { H3Event } from "h3";
import { setAnswerHeader } from "./node.js";

const API_PATH = /^\/(api\/)?v1\//;

// DELETE: /v1/responses/{id}; x-api-key and anthropic-*: the Anthropic SDK in a browser (/v1/messages);
// x-session-id: a browser app naming its session (docs/routing.md#affinity-key)
export const PREFLIGHT_HEADERS = {
  "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
  "access-control-allow-headers": "Authorization, Content-Type, X-Api-Key, Anthropic-Version, Anthropic-Beta, X-Session-Id",
  "access-control-max-age": "600",
};

/** The Access-Control-Allow-Origin value for this request, or undefined when CORS does not apply. */
export function allowedOrigin(event: H3Event, origins: string[]): string | undefined {
  if (origins.length === 0 || !API_PATH.test(event.url.pathname)) return undefined;
  if (origins.includes("*")) return "*";
  const origin = event.req.headers.get("origin");
  return origin && origins.includes(origin) ? origin : undefined;
}

/** Puts the CORS headers on the Node response too, so a stream written straight to it carries them. */
export function applyCors(event: H3Event, origin: string): void {
  setAnswerHeader(event, "access-control-allow-origin", origin);
  if (origin !== "*") setAnswerHeader(event, "vary", "Origin");
}

export function preflightResponse(origin: string | undefined): Response {
  const headers: Record<string, string> = origin ? { ...PREFLIGHT_HEADERS, "access-control-allow-origin": origin } : {};
  if (origin && origin !== "*") headers.vary = "Origin";
  return new Response(null, { status: 204, headers });
}
