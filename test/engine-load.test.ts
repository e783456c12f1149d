// Reading an engine's Prometheus text (docs/routing.md#load): vLLM's and SGLang's names, several
// series summed (the KV cache: the fullest), and nothing at all from a text without them.
import { describe, expect, it } from "vitest";
import { parseEngineMetrics } from "../src/upstream/engine-load.js";

describe("engine metrics", () => {
  it("sums vLLM's running and waiting over its series and keeps the fullest KV cache", () => {
    const text = [
      "# HELP vllm:num_requests_running Number of requests in model execution batches.",
      "# TYPE vllm:num_requests_running gauge",
      'vllm:num_requests_running{engine="0",model_name="qwen"} 3.0',
      'vllm:num_requests_running{engine="1",model_name="qwen"} 2.0',
      'vllm:num_requests_waiting{engine="0",model_name="qwen"} 7.0',
      'vllm:kv_cache_usage_perc{engine="0",model_name="qwen"} 0.42',
      'vllm:kv_cache_usage_perc{engine="1",model_name="qwen"} 0.97',
      'vllm:prompt_tokens_total{model_name="qwen"} 12345.0',
    ].join("\n");
    expect(parseEngineMetrics(text)).toEqual({ queue: 12, kv: 0.97 });
  });

  it("reads SGLang's names and vLLM's older KV cache name", () => {
    expect(parseEngineMetrics('sglang:num_running_reqs{model_name="m"} 4\nsglang:num_queue_reqs{model_name="m"} 6\nsglang:token_usage{model_name="m"} 0.5\n')).toEqual({ queue: 10, kv: 0.5 });
    expect(parseEngineMetrics("vllm:num_requests_waiting 1\nvllm:gpu_cache_usage_perc 0.3\n")).toEqual({ queue: 1, kv: 0.3 });
  });

  it("skips lines it cannot read and finds nothing in a text without the engine's names", () => {
    expect(parseEngineMetrics("vllm:num_requests_waiting{ 9\nvllm:num_requests_waiting NaN\nvllm:num_requests_waiting -4\nvllm:num_requests_running 2\n")).toEqual({ queue: 2, kv: 0 });
    expect(parseEngineMetrics("<html>502 Bad Gateway</html>")).toBeUndefined();
    expect(parseEngineMetrics("")).toBeUndefined();
  });
});
