// POST /v1/audio/speech and /api/v1/audio/speech as a spec of the metered pipeline
// (docs/fleet.md#speech): OpenAI's text-to-speech request, the voice checked against the model's
// list, and the upstream's audio piped to the client as it arrives — the first words play before
// the model has made the last. Billed by characters (Unicode code points; the usage row's
// inputTokens are those characters).
//
// Audio has no error event: a cut after the head was sent ends the answer (a declared length is
// then broken off, so the client sees the audio is incomplete), and is billed for what was sent.
import type { ServerResponse } from "node:http";
import type { AudioSpeechModelConfig } from "../config/schema.js";
import { cutFinishReason } from "../http/cancel.js";
import { relayAnswer, type AnswerSink } from "../chat/pump.js";
import type { Meter } from "../metered/meter.js";
import { appAllowsListed, resolveModel, type Aliases } from "../metered/models.js";
import type { Call, MeteredSpec, PlanBase } from "../metered/spec.js";
import type { UpstreamReply } from "../upstream/types.js";
import { speechPoints } from "./points.js";
import { speechHeaders } from "./speech-headers.js";
import { SPEECH_PATH, checkVoice, parseSpeechRequest, speechCharacters, speechUpstreamBody, type SpeechRequest } from "./speech-request.js";

interface SpeechPlan extends PlanBase {
  body: string;
  characters: number;
}

export interface SpeechSpecDeps {
  speechModels: Map<string, AudioSpeechModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
}

type SpeechCall = Call<SpeechRequest, AudioSpeechModelConfig>;

export function createSpeechSpec(deps: SpeechSpecDeps): MeteredSpec<SpeechRequest, AudioSpeechModelConfig, SpeechPlan, UpstreamReply> {
  return {
    what: "Speech",
    parse: parseSpeechRequest,
    streams: () => true,
    model: (req, caller) => resolveModel(deps.speechModels, deps.aliases, req.model, (m) => appAllowsListed(caller.app, m), deps.serves, "speech model"),
    least: (model) => speechPoints(model, 1),
    async prepare({ req, caller, model }) {
      checkVoice(req, model);
      const characters = speechCharacters(req.input);
      const budgeted = caller.limits.some((l) => l.maxUsagePoints >= 0);
      return { body: JSON.stringify(speechUpstreamBody(req, model)), characters, worstCase: budgeted ? speechPoints(model, characters) : 0 };
    },
    // the answer is taken once its head arrived: its audio is relayed, not read here
    attempt: (client, plan, { model, cancel }) => client.post({ path: SPEECH_PATH, body: plan.body, signal: cancel, model: model.model }),
    async respond(reply, plan, call, meter) {
      const headers = speechHeaders(reply.headers, call.req.response_format);
      return {
        headers,
        pump: (res) => relayAudio(reply, res, plan, call, meter, headers["content-length"]),
        // never used: relayAudio ends a cut answer itself, since audio has no error event
        error: () => "",
      };
    },
  };
}

/** Writes the upstream's audio to the client with backpressure, then settles; a cut is settled for
 *  what was sent, and a declared length is broken off rather than ended short. */
async function relayAudio(reply: UpstreamReply, res: ServerResponse, plan: SpeechPlan, call: SpeechCall, meter: Meter, length: string | undefined): Promise<void> {
  const { model, cancel } = call;
  const sink = new AudioSink(res, () => (call.facts.ttftMs ??= performance.now() - call.started));
  const cut = await relayAnswer(reply.body, res, sink, reply.maxBytes, cancel, model.model);
  if (cut) {
    const characters = sentCharacters(plan.characters, sink.sent, length === undefined ? undefined : Number(length));
    await meter.settle({ inputTokens: characters, points: speechPoints(model, characters), finishReason: cutFinishReason(cancel), cut });
    if (length !== undefined) res.destroy();
    return;
  }
  await meter.settle({ inputTokens: plan.characters, points: speechPoints(model, plan.characters) });
}

/** The characters billed for a cut answer: none when no audio was sent, in proportion to the audio
 *  sent when the upstream said how long its audio is, else all (the gateway cannot tell how much of
 *  the text the sent audio speaks). */
export function sentCharacters(characters: number, sent: number, total: number | undefined): number {
  if (sent === 0) return 0;
  if (total === undefined || !(total > 0)) return characters;
  return Math.min(characters, Math.ceil((characters * sent) / total));
}

/** The client's side of the relay: bytes written as they come, counted. */
/** Audio has no events: what comes is relayed, and an answer the upstream ended is complete. */
class AudioSink implements AnswerSink {
  readonly done = false;
  sent = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly onFirstBytes: () => void,
  ) {}

  push(chunk: Buffer): boolean {
    if (this.sent === 0) this.onFirstBytes();
    this.sent += chunk.length;
    return this.res.destroyed ? true : this.res.write(chunk);
  }

  finish(): void {}

  finishReason(): string {
    return "stop";
  }
}
