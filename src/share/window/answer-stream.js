// Reads the chat endpoint's answer: an OpenAI event stream (or, should the gateway answer whole,
// one JSON completion). Text pieces go to `onDelta`; an error event becomes a RequestFailure; a
// stream that ends without `[DONE]` is an AnswerInterrupted. Aborting the fetch rejects the read.
import { AnswerInterrupted, RequestFailure } from "./errors.js";

export async function readAnswer(res, onDelta) {
  if (!(res.headers.get("content-type") || "").includes("text/event-stream")) {
    const data = await res.json();
    onDelta((data.choices && data.choices[0] && data.choices[0].message.content) || "");
    return;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const state = { event: "", done: false };
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    const lines = buffer.split("\n");
    buffer = lines.pop();
    for (const raw of lines) readLine(raw.replace(/\r$/, ""), state, onDelta);
  }
  if (!state.done) throw new AnswerInterrupted();
}

function readLine(line, state, onDelta) {
  if (line === "") {
    state.event = "";
    return;
  }
  if (line.startsWith("event:")) {
    state.event = line.slice(6).trim();
    return;
  }
  if (!line.startsWith("data:")) return;
  const data = line.slice(5).trim();
  if (data === "[DONE]") {
    state.done = true;
    return;
  }
  let payload;
  try { payload = JSON.parse(data); } catch { return; }
  if (state.event === "error" || (payload && payload.error)) {
    const err = (payload && payload.error) || {};
    throw new RequestFailure(0, err.code || "", err.message || "", null, true);
  }
  if (state.event === "flowResponses") return;
  const choice = payload && payload.choices && payload.choices[0];
  const delta = choice && choice.delta && choice.delta.content;
  if (delta) onDelta(delta);
}
