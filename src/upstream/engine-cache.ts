// What an engine's prefix cache can hold (docs/routing.md#prefix), from its Prometheus text: vLLM's
// `vllm:cache_config_info{block_size="16",num_gpu_blocks="28000",…} 1` (block_size × num_gpu_blocks
// tokens) or SGLang's `sglang:max_total_num_tokens`. Read beside the load (./engine-load.ts) from the
// same scrape; undefined when the text says neither.

const VLLM = "vllm:cache_config_info{";
const SGLANG = "sglang:max_total_num_tokens";
const label = (labels: string, name: string): number => Number(new RegExp(`(?:^|,)\\s*${name}="(\\d+)"`).exec(labels)?.[1]);

export function parseCacheTokens(text: string): number | undefined {
  const v = text.indexOf(VLLM);
  if (v >= 0 && (v === 0 || text[v - 1] === "\n")) {
    const end = text.indexOf("}", v);
    const labels = end > v ? text.slice(v + VLLM.length, end) : "";
    const tokens = label(labels, "block_size") * label(labels, "num_gpu_blocks");
    if (Number.isFinite(tokens) && tokens > 0) return tokens;
  }
  for (let at = text.indexOf(SGLANG); at >= 0; at = text.indexOf(SGLANG, at + 1)) {
    if (at > 0 && text[at - 1] !== "\n") continue;
    const line = text.slice(at, text.indexOf("\n", at) >>> 0);
    const value = Number(/\s(\S+)\s*$/.exec(line)?.[1]);
    if (Number.isFinite(value) && value > 0) return value;
  }
  return undefined;
}
