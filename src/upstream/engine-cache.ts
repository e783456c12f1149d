// What an engine's prefix cache can hold (docs/routing.md#prefix), from a sample of its Prometheus
// text: vLLM's `vllm:cache_config_info{block_size="16",num_gpu_blocks="28000",…} 1` (block_size ×
// num_gpu_blocks tokens) or SGLang's `sglang:max_total_num_tokens`. Read by the engine scrape
// (./engine-load.ts) beside the load, in the same pass over the text.

const VLLM = "vllm:cache_config_info";
const SGLANG = "sglang:max_total_num_tokens";
/** the names of the samples that say what the cache holds */
export const CACHE_NAMES: readonly string[] = [VLLM, SGLANG];

const label = (labels: string, name: string): number => Number(new RegExp(`(?:^|,)\\s*${name}="(\\d+)"`).exec(labels)?.[1]);

/** The tokens one sample of CACHE_NAMES says the cache holds; undefined when it says nothing usable. */
export function cacheTokensOf(name: string, labels: string, value: number): number | undefined {
  const tokens = name === VLLM ? label(labels, "block_size") * label(labels, "num_gpu_blocks") : value;
  return Number.isFinite(tokens) && tokens > 0 ? tokens : undefined;
}
