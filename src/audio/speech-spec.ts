// POST /v1/audio/speech and /api/v1/audio/speech as a spec of the metered pipeline
// (docs/fleet.md#speech): OpenAI's text-to-speech request, the voice checked against the model's
// list, and the upstream's audio piped to the client as it arrives — the first words play before
// the model has made the last. Billed by characters (Unicode code points; the usage row's
// inputTokens are those characters).
//
// Audio has no error event: a cut after the head was sent ends the answer (a declared length is
// then broken off, so the client sees the audio is incomplete). A client that leaves once the model
// answered is billed every character (the model made the audio, or is making it); a cut on the
// model's or the gateway's side, for what was sent.
import type { AnswerOut } from "../http/answer-out.js";
import type { AudioSpeechModelConfig } from "../config/schema.js";
import type { AnswerSink } from "../stream/pump.js";
import { appAllowsListed, resolveModel, type Aliases } from "../metered/models.js";
import { budgeted } from "../metered/quota.js";
import type { MeteredSpec, PlanBase } from "../metered/spec.js";
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

export function createSpeechSpec(deps: SpeechSpecDeps): MeteredSpec<SpeechRequest, AudioSpeechModelConfig, SpeechPlan, UpstreamReply> {
  return {
    what: "Speech",
    parse: ({ body }) => parseSpeechRequest(body),
    streams: () => true,
    model: (req, caller) => resolveModel(deps.speechModels, deps.aliases, req.model, (m) => appAllowsListed(caller.app, m), deps.serves, "speech model"),
    least: (model) => speechPoints(model, 1),
    async prepare({ req, caller, model }) {
      checkVoice(req, model);
      const characters = speechCharacters(req.input);
      return { body: JSON.stringify(speechUpstreamBody(req, model)), characters, worstCase: budgeted(caller.limits, { tokens: false }) ? speechPoints(model, characters) : 0 };
    },
    // the answer is taken once its head arrived: its audio is relayed, not read here
    attempt: (client, plan, { model, cancel }) => client.post({ path: SPEECH_PATH, body: plan.body, signal: cancel, model: model.model }),
    async respond(reply, plan, { req, model, cancel }) {
      const headers = speechHeaders(reply.headers, req.response_format);
      const length = headers["content-length"] === undefined ? undefined : Number(headers["content-length"]);
      let sink: AudioSink;
      return {
        headers,
        body: reply.body,
        maxBytes: reply.maxBytes,
        sink: (res, firstBytes) => (sink = new AudioSink(res, firstBytes)),
        // a client that left once the model answered is billed every character, another cut for what
        // was sent; audio has no error event (the pipeline breaks off a declared length)
        async used(cut) {
          const characters = cut && cancel.reason !== "client_abort" ? sentCharacters(plan.characters, sink.sent, length) : plan.characters;
          return { inputTokens: characters, points: speechPoints(model, characters) };
        },
      };
    },
  };
}

/** The characters billed for a cut answer: none when no audio was sent, in proportion to the audio
 *  sent when the upstream said how long its audio is, else all (the gateway cannot tell how much of
 *  the text the sent audio speaks). */
export function sentCharacters(characters: number, sent: number, total: number | undefined): number {
  if (sent === 0) return 0;
  if (total === undefined || !(total > 0)) return characters;
  return Math.min(characters, Math.ceil((characters * sent) / total));
}

/** The client's side of the relay: bytes written as they come, counted. Audio has no events: what comes is relayed, and an answer the upstream ended is complete. */
class AudioSink implements AnswerSink {
  readonly done = false;
  sent = 0;

  constructor(
    private readonly res: AnswerOut,
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
