// Reading an engine's Prometheus text (docs/routing.md#load): vLLM's and SGLang's names, several
// series summed (the KV cache: the fullest), and nothing at all from a text without them; read in
// pieces, a line cut between two is read whole and a line too long for a sample is skipped.
import { describe, expect, it } from "vitest";
import { EngineMetricsReader, parseEngineMetrics } from "../src/upstream/engine-load.js";

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
    expect(parseEngineMetrics(text)).toEqual({ queue: 12, kv: 0.97, waiting: 7 });
  });

  it("reads SGLang's names and vLLM's older KV cache name", () => {
    expect(parseEngineMetrics('sglang:num_running_reqs{model_name="m"} 4\nsglang:num_queue_reqs{model_name="m"} 6\nsglang:token_usage{model_name="m"} 0.5\n')).toEqual({ queue: 10, kv: 0.5, waiting: 6 });
    expect(parseEngineMetrics("vllm:num_requests_waiting 1\nvllm:gpu_cache_usage_perc 0.3\n")).toEqual({ queue: 1, kv: 0.3, waiting: 1 });
  });

  it("skips lines it cannot read and finds nothing in a text without the engine's names", () => {
    expect(parseEngineMetrics("vllm:num_requests_waiting{ 9\nvllm:num_requests_waiting NaN\nvllm:num_requests_waiting -4\nvllm:num_requests_running 2\n")).toEqual({ queue: 2, kv: 0, waiting: 0 });
    expect(parseEngineMetrics("<html>502 Bad Gateway</html>")).toBeUndefined();
    expect(parseEngineMetrics("")).toBeUndefined();
  });

  it("reads a text fed in pieces as it reads it whole, lines cut anywhere", () => {
    const text = 'm 1\nvllm:num_requests_running{engine="0"} 3\r\nvllm:num_requests_running_total 50\nvllm:num_requests_waiting 4\nvllm:kv_cache_usage_perc 0.25\nvllm:num_requests_running 1';
    for (const size of [1, 2, 5, 7, 64]) {
      const reader = new EngineMetricsReader();
      for (let at = 0; at < text.length; at += size) reader.feed(text.slice(at, at + size));
      expect(reader.end(), `pieces of ${size}`).toEqual({ queue: 8, kv: 0.25, waiting: 4 });
    }
  });

  it("skips a line longer than any sample, held neither whole nor in part", () => {
    const reader = new EngineMetricsReader();
    reader.feed(`vllm:num_requests_running{x="${"a".repeat(10_000)}`);
    reader.feed(`${"a".repeat(10_000)}"} 50\nvllm:num_requests_waiting 2\n`);
    expect(reader.end()).toEqual({ queue: 2, kv: 0, waiting: 2 });
  });
});
