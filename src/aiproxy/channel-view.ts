// A Sluice channel as aiproxy's channel object (docs/fastgpt.md#channels), what FastGPT's channel
// table and its server's zod schema read. A key is never answered: "********" says there is one.
import type { ChannelConfig } from "../config/schema.js";
import type { BreakerView } from "../cluster/types.js";
import type { ChannelMeta } from "../upstream/channel-book.js";

/** aiproxy's type 1, OpenAI-compatible: the one protocol Sluice speaks to model servers. */
export const OPENAI_TYPE = 1;
/** What aiproxy and FastGPT send for "keep the key as it is". */
export const KEY_MASK = "********";
/** What an empty base_url becomes (the schema's default of channels[].baseUrl). */
export const DEFAULT_BASE_URL = "http://127.0.0.1:6006";

export const TYPE_METAS = { [OPENAI_TYPE]: { name: "OpenAI-compatible", keyHelp: "", defaultBaseUrl: DEFAULT_BASE_URL, readme: "" } };

export interface ChannelState {
  up: boolean;
  breaker: BreakerView["phase"];
  /** epoch ms of this instance's last call to the channel (or check), 0 never */
  accessedAt: number;
  /** epoch ms of its last failure, 0 never */
  lastErrorAt: number;
}

export function channelView(channel: ChannelConfig, meta: ChannelMeta, state: ChannelState) {
  return {
    id: meta.id,
    name: channel.name,
    type: OPENAI_TYPE,
    key: channel.key ? KEY_MASK : "",
    base_url: channel.type === "echo" ? "" : channel.baseUrl,
    proxy_url: "",
    models: channel.models,
    model_mapping: channel.modelMapping,
    priority: channel.weight,
    status: meta.status,
    created_at: meta.createdAt,
    accessed_at: state.accessedAt,
    last_test_error_at: state.lastErrorAt,
    balance: 0,
    balance_threshold: 0,
    balance_updated_at: 0,
    enabled_auto_balance_check: false,
    skip_tls_verify: false,
    enabled_no_permission_ban: false,
    warn_error_rate: 0,
    max_error_rate: 0,
    sluice: { source: meta.source, overridden: meta.overridden, tier: channel.priority, up: state.up, breaker: state.breaker },
  };
}

export type AiproxyChannel = ReturnType<typeof channelView>;
