// A spec sees the request, not only the body (docs/architecture.md#the-spec): `parse` is handed the
// body, the path's parameters, the query and the headers, so a kind whose model, stream flag or key
// is in the path or the query (Gemini's `models/{m}:streamGenerateContent?alt=sse`, `x-goog-api-key`)
// needs no new pipeline step.
import { H3 } from "h3";
import { describe, expect, it } from "vitest";
import { requestParts } from "../src/metered/spec.js";

describe("requestParts", () => {
  it("hands parse the body, the path parameters, the query and the headers", async () => {
    const app = new H3().post("/v1beta/models/:model", async (event) => {
      const parts = requestParts(event, await event.req.json());
      return { body: parts.body, params: parts.params, alt: parts.query.get("alt"), key: parts.headers.get("x-goog-api-key") };
    });
    const res = await app.fetch(
      new Request("http://gateway.test/v1beta/models/gemini:streamGenerateContent?alt=sse", {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": "k-123" },
        body: JSON.stringify({ contents: [] }),
      }),
    );
    expect(await res.json()).toEqual({ body: { contents: [] }, params: { model: "gemini:streamGenerateContent" }, alt: "sse", key: "k-123" });
  });
});
