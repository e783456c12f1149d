// Who may show the share window in a frame: `server.sharePage.frameAncestors` becomes the page's
// CSP frame-ancestors (default 'self'); a source that is not 'self', 'none' or an origin is a
// config error at its path, so nothing else can be slipped into the policy.
import { afterEach, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { problemsOf } from "./support/refusal.js";

const base = () => ({
  channels: [{ name: "demo", type: "echo", models: ["m"] }],
  llmModels: [{ model: "m" }],
  apps: [{ id: "support", model: "m" }],
  shareLinks: [{ shareId: "open", appId: "support" }],
});

let gw: StartedGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

/** The page's policy, directive by directive. */
async function pagePolicy(url: string): Promise<Map<string, string>> {
  const res = await fetch(`${url}/chat/share?shareId=open`);
  expect(res.status).toBe(200);
  const policy = res.headers.get("content-security-policy") ?? "";
  return new Map(policy.split(";").map((d) => d.trim().split(/ (.*)/s) as [string, string]));
}

describe("share page: frame-ancestors", () => {
  it("is 'self' by default, beside the rest of the policy", async () => {
    gw = await startGateway(base());
    const policy = await pagePolicy(gw.url);
    expect(policy.get("frame-ancestors")).toBe("'self'");
    expect(policy.get("script-src")).toBe("'self'");
    expect(policy.get("default-src")).toBe("'none'");
  });

  it("carries the configured sources, in order", async () => {
    gw = await startGateway({ ...base(), server: { sharePage: { frameAncestors: ["'self'", "https://portal.example.com", "https://*.intra.example.com:8443"] } } });
    const policy = await pagePolicy(gw.url);
    expect(policy.get("frame-ancestors")).toBe("'self' https://portal.example.com https://*.intra.example.com:8443");
  });

  it("'none' forbids every frame", async () => {
    gw = await startGateway({ ...base(), server: { sharePage: { frameAncestors: ["'none'"] } } });
    expect((await pagePolicy(gw.url)).get("frame-ancestors")).toBe("'none'");
  });

  it("refuses a source that is not 'self', 'none' or an origin, naming its path", () => {
    const bad = ["self", "https://portal.example.com/embed", "https://a.example.com; script-src *", "*", "javascript:", "'unsafe-inline'"];
    for (const source of bad) {
      const problems = problemsOf({ ...base(), server: { sharePage: { frameAncestors: ["'self'", source] } } });
      expect(problems, source).toEqual([expect.stringMatching(/^server\.sharePage\.frameAncestors\[1\]: expected 'self', 'none' or an origin/)]);
    }
  });

  it("refuses 'none' beside other sources, an empty list and an unknown key", () => {
    expect(problemsOf({ ...base(), server: { sharePage: { frameAncestors: ["'none'", "'self'"] } } })).toEqual([
      expect.stringMatching(/^server\.sharePage\.frameAncestors: 'none' stands alone/),
    ]);
    expect(problemsOf({ ...base(), server: { sharePage: { frameAncestors: [] } } })).toEqual([
      expect.stringMatching(/^server\.sharePage\.frameAncestors: give at least one source/),
    ]);
    expect(problemsOf({ ...base(), server: { sharePage: { frameAncestor: ["'self'"] } } })).toEqual([
      expect.stringMatching(/^server\.sharePage/),
    ]);
  });
});
