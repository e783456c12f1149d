// Large bodies are parsed in pieces, the event loop given back between them (issue 27, item 1;
// docs/api.md#request-bounds): under the dialects' 8 MiB limit, a valid prompt, 60,000 wrong content
// blocks, a malformed prompt and a too deep one are each answered as a whole parse would answer
// them, 2.7 million blocks refused before they are made, and no timer of the gateway's process waits
// 50 ms meanwhile. The client is a process of its own: its 8 MiB strings are not the gateway's
// work. A latency ceiling: this file runs in the "alone" group (vitest.config.ts).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CODER, DEV_KEY, startMessagesGateway, type MessagesGateway } from "./support/messages-gateway.js";
import { textChunks } from "./support/scripted-upstream.js";

const MIB = 1024 * 1024;
let h: MessagesGateway;

beforeAll(async () => {
  h = await startMessagesGateway(() => ({ chunks: textChunks("fine", 1), finishReason: "stop" }), {
    extra: { server: { dialectBodyLimitBytes: 8 * MIB, bodyLimitBytes: 2 * MIB, log: { level: "warn" } } },
  });
  // the encoding loaded, the code compiled: what the gateway has done before an attacker comes
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${h.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": DEV_KEY },
      body: JSON.stringify({ model: CODER, messages: [{ role: "user", content: "warm up" }] }),
    });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => {
  await h?.close();
});

/** Builds the bodies (argv: the gateway's URL, the key, the model), prints "ready", and once told
 *  "go" posts each in turn, printing one line per answer: the path, the status, the body. */
const CLIENT = `
const [url, key, model] = process.argv.slice(1);
const many = (item, n) => "[" + Array(n).fill(item).join(",") + "]";
const words = Array.from({ length: 950000 }, (_, i) => "w" + (i * 7919).toString(36)).join(" ");
const prompt = JSON.stringify({ model, messages: [{ role: "user", content: words }] });
const blocks = (n) => '{"model":"' + model + '","max_tokens":5,"messages":[{"role":"user","content":' + many("[]", n) + "}]}";
const bodies = [
  ["/v1/messages/count_tokens", prompt],
  ["/v1/messages", blocks(60000)],
  ["/v1/messages", blocks(2700000)],
  ["/v1/messages/count_tokens", prompt.slice(0, -100)],
  ["/v1/messages", prompt.slice(0, -1) + ',"x":' + "[".repeat(70) + "]".repeat(70) + "}"],
  ["/v1/chat/completions", '{"messages":' + many('{"role":"x"}', 30000) + "}"],
];
process.stdout.write("ready\\n");
process.stdin.once("data", async () => {
  for (const [path, body] of bodies) {
    if (body.length < 7 * 1024 * 1024 && path !== "/v1/chat/completions" && !body.includes('"content":[[]')) throw new Error("a body too small");
    const headers = { "content-type": "application/json", "x-api-key": key, authorization: "Bearer " + key };
    const res = await fetch(url + path, { method: "POST", headers, body: Buffer.from(body) });
    process.stdout.write(JSON.stringify({ path, status: res.status, body: await res.json() }) + "\\n");
  }
  process.exit(0);
});`;

describe("an 8 MiB body", () => {
  it("is answered as a whole parse answers it, the event loop never held 50 ms (before: 470 ms for 2.7 million blocks, 66 ms for the deep one)", async () => {
    // started before the watch: a fork of this process is a step of its own
    const client = spawn(process.execPath, ["-e", CLIENT, h.url, DEV_KEY, CODER], { stdio: ["pipe", "pipe", "inherit"] });
    const exited = once(client, "exit");
    let out = "";
    client.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    while (!out.includes("ready\n")) await Promise.race([once(client.stdout!, "data"), exited]);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    await sleep(25); // the histogram records from its second tick on
    client.stdin!.end("go\n");
    const [code] = await exited;
    await sleep(25); // the histogram's timer records a stall only when it next runs
    delay.disable();
    expect(code).toBe(0);
    const answers = out.slice(out.indexOf("ready\n") + 6).trim().split("\n").map((line) => JSON.parse(line) as { status: number; body: { error?: { message: string } } });
    expect(answers.map((a) => a.status)).toEqual([200, 400, 400, 400, 400, 400]);
    expect(answers[0]!.body).toEqual({ input_tokens: 2 * 131072 });
    expect(answers.slice(1).map((a) => a.body.error!.message)).toEqual([
      "messages[0].content: must hold at most 1000 items",
      "Request body holds more than 100000 objects, arrays and strings.",
      "Request body is not valid JSON.",
      "Request body nests arrays or objects more than 64 levels deep.",
      "messages: must hold at most 2048 items",
    ]);
    const maxMs = delay.max / 1e6;
    expect(maxMs, `longest event-loop delay ${maxMs.toFixed(1)} ms`).toBeLessThan(50);
  });
});
