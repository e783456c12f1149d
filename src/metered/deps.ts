// What the one metered pipeline is given by the runtime (src/runtime.ts builds it once per config).
import type { Keyring } from "../auth/keys.js";
import type { ClusterState } from "../cluster/types.js";
import type { BodyLimits } from "../http/body.js";
import type { Inflight } from "../http/inflight.js";
import type { Observer } from "../observability/observer.js";
import type { Store } from "../store/types.js";
import type { ChannelRouter } from "../upstream/router.js";
import type { CallerDeps } from "./caller.js";
import type { Quota } from "./quota.js";
import type { Tap } from "./taps.js";

export interface MeteredDeps extends CallerDeps {
  keyring: Keyring;
  body: BodyLimits;
  router: ChannelRouter;
  quota: Quota;
  observer: Observer;
  inflight: Inflight;
  store: Store;
  /** the shared state of the caps on calls in flight */
  state: ClusterState;
  maxAttempts: number;
  /** proxies in front whose X-Forwarded-For is believed (server.trustProxy) */
  trustProxy: number;
  /** epoch ms now: the moment quotas by time are judged at */
  clock: () => number;
  /** what is told of every metered request at the pipeline's fixed points (./taps.ts) */
  taps?: readonly Tap[];
}

