// A JSON response, as every successful JSON route sends it.
import { FastResponse } from "srvx";

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

export function jsonResponse(body: unknown): Response {
  return new FastResponse(JSON.stringify(body), { headers: JSON_HEADERS });
}
