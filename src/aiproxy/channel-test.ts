// aiproxy's channel test (docs/fastgpt.md#channel-test): one minimal call of the model's kind on that
// channel alone — no failover, also when it is disabled or its breaker is open. No app is billed and
// no usage row written; the outcome counts for the channel's health as a health check's does.
import type { H3Event } from "h3";
import type { Keyring } from "../auth/keys.js";
import type { ModelKind } from "../config/fleet.js";
import type { Config } from "../config/schema.js";
import { Cancel } from "../http/cancel.js";
import { redactSecrets, UpstreamError } from "../upstream/errors.js";
import { readLimited } from "../upstream/read.js";
import type { ChannelRouter } from "../upstream/router.js";
import type { PostRequest } from "../upstream/types.js";
import { OPENAI_TYPE } from "./channel-view.js";
import { failed, ok } from "./envelope.js";

/** aiproxy's mode numbers, by kind (its logs and tests name a call's kind so). */
export const MODES: Record<ModelKind, number> = { chat: 1, embeddings: 3, speech: 7, transcription: 8, rerank: 10 };
const MAX_RESPONSE = 1024;
const TEST_TIMEOUT_MS = 60_000;

export interface ChannelTestDeps {
  keyring: Keyring;
  router: ChannelRouter;
  config: Config;
  kinds: Map<string, ModelKind>;
}

export function createChannelTest(deps: ChannelTestDeps) {
  return async function test(event: H3Event): Promise<Response> {
    const id = Number(event.context.params?.id);
    const model = decodeURIComponent(event.context.params?.model ?? "");
    const entry = deps.router.entries.find((e) => e.config.id === id);
    if (!entry) return failed("channel not found");
    const kind = deps.kinds.get(model);
    if (!entry.config.models.includes(model) || !kind) return failed("model not supported by channel");
    const actual = entry.config.modelMapping[model] ?? model;
    const withBody = new URL(event.req.url).searchParams.get("success_body") === "true";
    const started = Date.now();
    const cancel = new Cancel();
    const timer = setTimeout(() => cancel.abort("timeout"), Math.min(entry.config.totalTimeoutMs, TEST_TIMEOUT_MS)).unref();
    let code = 200;
    let response = "";
    let error: string | undefined;
    try {
      const reply = await entry.client.post({ ...testCall(kind, actual, deps.config), signal: cancel, model });
      code = reply.status;
      // redacted as an error body is: a server that echoes its headers must not hand FastGPT the key
      response = cut(redactSecrets((await readLimited(reply.body, reply.maxBytes)).toString("utf8"), entry.config.key ? [entry.config.key] : []));
      deps.router.report(entry, true);
    } catch (err) {
      const upstream = err instanceof UpstreamError ? err : undefined;
      code = upstream?.upstreamStatus ?? upstream?.status ?? 502;
      error = cut(upstream?.detail ?? (err instanceof Error ? err.message : String(err)));
      response = error;
      deps.router.report(entry, false, upstream?.outcome ?? "http_error");
    } finally {
      clearTimeout(timer);
    }
    const data = {
      channel_id: id,
      channel_name: entry.config.name,
      channel_type: OPENAI_TYPE,
      model,
      actual_model: actual,
      mode: MODES[kind],
      test_at: started,
      took: Math.max(0.001, (Date.now() - started) / 1000),
      success: error === undefined,
      code,
      response: error !== undefined || withBody ? response : "",
    };
    // aiproxy answers a failed test with success: true; FastGPT, reading only the envelope, would call it a pass
    return error === undefined ? ok(data) : failed(`channel ${entry.config.name} (${id}) model ${model}: ${code} ${error}`, data);
  };
}

/** The least call of the model's kind. */
function testCall(kind: ModelKind, model: string, config: Config): Omit<PostRequest, "signal" | "model"> {
  switch (kind) {
    case "chat":
      return { path: "/chat/completions", body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 16 }) };
    case "embeddings":
      return { path: "/embeddings", body: JSON.stringify({ model, input: "hi" }) };
    case "rerank":
      return { path: "/rerank", body: JSON.stringify({ model, query: "hi", documents: ["hi"] }) };
    case "speech": {
      const voice = config.audioSpeechModels.find((m) => m.model === model)?.voices[0]?.value ?? "alloy";
      return { path: "/audio/speech", body: JSON.stringify({ model, input: "hi", voice }) };
    }
    case "transcription":
      return transcriptionCall(model);
  }
}

/** A multipart upload of one second of silence (16 kHz, 16-bit mono WAV). */
function transcriptionCall(model: string): Omit<PostRequest, "signal" | "model"> {
  const boundary = "sluice-channel-test";
  const samples = Buffer.alloc(32_000);
  const head = Buffer.alloc(44);
  head.write("RIFF", 0);
  head.writeUInt32LE(36 + samples.length, 4);
  head.write("WAVEfmt ", 8);
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20);
  head.writeUInt16LE(1, 22);
  head.writeUInt32LE(16_000, 24);
  head.writeUInt32LE(32_000, 28);
  head.writeUInt16LE(2, 32);
  head.writeUInt16LE(16, 34);
  head.write("data", 36);
  head.writeUInt32LE(samples.length, 40);
  const part = (headers: string) => Buffer.from(`--${boundary}\r\n${headers}\r\n\r\n`);
  const body = Buffer.concat([
    part(`Content-Disposition: form-data; name="model"`),
    Buffer.from(`${model}\r\n`),
    part(`Content-Disposition: form-data; name="file"; filename="test.wav"\r\nContent-Type: audio/wav`),
    head,
    samples,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { path: "/audio/transcriptions", body, contentType: `multipart/form-data; boundary=${boundary}` };
}

function cut(text: string): string {
  return text.length <= MAX_RESPONSE ? text : `${text.slice(0, MAX_RESPONSE)}...`;
}
