// One test upstream and one gateway in front of it for a whole test file (beforeAll/afterAll).
import { afterAll, beforeAll } from "vitest";
import { startGateway, type StartOptions, type StartedGateway } from "./gateway.js";
import { startUpstream, type Upstream } from "./upstream.js";

export interface Harness {
  readonly upstream: Upstream;
  readonly gw: StartedGateway;
}

export function useGateway(makeConfig: (upstreamUrl: string) => Record<string, unknown>, opts: StartOptions = {}): Harness {
  const h = {} as { upstream: Upstream; gw: StartedGateway };
  beforeAll(async () => {
    h.upstream = await startUpstream();
    h.gw = await startGateway(makeConfig(h.upstream.url), opts);
  });
  afterAll(async () => {
    await h.gw?.close();
    await h.upstream?.close();
  });
  return h;
}
