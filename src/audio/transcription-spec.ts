// POST /v1/audio/transcriptions and /api/v1/audio/transcriptions as a spec of the metered pipeline
// (docs/fleet.md#transcription): the multipart upload spooled to a temporary file as it arrives
// (`read`; 413 past server.audioLimitBytes, the rest of the upload left unread), removed once the
// request is over (`release`), its duration read from the file; each attempt posts a fresh multipart
// stream of it; the model's answer passed back in the format asked for. Billed by minutes of audio
// (the usage row's inputTokens are its seconds, rounded up).
import type { IncomingHttpHeaders } from "node:http";
import { FastResponse } from "srvx";
import type { SttModelConfig } from "../config/schema.js";
import { GatewayError } from "../http/errors.js";
import { nodeRequest } from "../http/node.js";
import type { Caller } from "../metered/caller.js";
import { appAllowsListed, resolveModel, type Aliases } from "../metered/models.js";
import { budgeted } from "../metered/quota.js";
import type { MeteredSpec, PlanBase } from "../metered/spec.js";
import { readReply } from "../upstream/read.js";
import { durationBound, readAudioInfo, type AudioInfo } from "./audio-info.js";
import { createMultipartBody, type MultipartBody } from "./multipart-body.js";
import { readAudioUpload, type AudioUpload } from "../http/multipart-upload.js";
import { sweepSpool } from "../http/spool.js";
import type { UploadSlots } from "./upload-slots.js";
import { transcriptionPoints } from "./points.js";
import { answerSeconds, billedSeconds, transcriptionHeaders } from "./transcription-answer.js";
import { TRANSCRIPTION_PATH, parseTranscriptionFields, transcriptionUpstreamFields, type TranscriptionRequest } from "./transcription-request.js";

interface TranscriptionCall extends TranscriptionRequest {
  upload: AudioUpload;
}

interface TranscriptionPlan extends PlanBase {
  info: AudioInfo;
  body: MultipartBody;
}

interface TranscriptionAnswer {
  body: Buffer;
  headers: IncomingHttpHeaders;
}

export interface TranscriptionSpecDeps {
  sttModels: Map<string, SttModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
  /** server.audioLimitBytes */
  limitBytes: number;
  /** server.audioSpoolDir (default: the OS's temporary directory) */
  spoolDir?: string;
  /** server.bodyTimeoutMs: the whole upload's deadline */
  bodyTimeoutMs: number;
  /** the uploads in flight, bounded by server.audioMaxUploads and audioMaxUploadsPerKey */
  slots: UploadSlots;
}

export function createTranscriptionSpec(deps: TranscriptionSpecDeps): MeteredSpec<TranscriptionCall, SttModelConfig, TranscriptionPlan, TranscriptionAnswer, AudioUpload> {
  const resolve = (name: string, caller: Caller) => resolveModel(deps.sttModels, deps.aliases, name, (m) => appAllowsListed(caller.app, m), deps.serves, "transcription model");
  void sweepSpool(deps.spoolDir);
  return {
    what: "Transcription",
    read(event, _limits, cancel, judge) {
      const req = nodeRequest(event);
      if (!req) throw new GatewayError(500, "upload_unsupported", "Uploads need the Node server adapter.", { type: "server_error" });
      // judged before the file is written: the caller, QPM, the model when named before the file
      // (a file sent first is judged by its model once it has arrived), and a slot for the upload
      const admit = async (fields: Array<[string, string]>) => {
        const name = fields.findLast(([field]) => field === "model")?.[1];
        const caller = await judge(name ? (c) => resolve(name, c) : undefined);
        return deps.slots.take(caller.key?.name ?? caller.app.id);
      };
      return readAudioUpload({ headers: req.headers, body: req }, { limitBytes: deps.limitBytes, dir: deps.spoolDir, cancel, timeoutMs: deps.bodyTimeoutMs, admit });
    },
    release: (upload) => upload.remove(),
    // a log's detail (docs/fastgpt.md#bodies): the form's fields, the file by its name and size
    logged: ({ fields, filename, bytes }) => JSON.stringify({ ...Object.fromEntries(fields), file: `${filename}, ${bytes} bytes` }),
    parse: ({ body: upload }) => ({ ...parseTranscriptionFields(upload.fields), upload }),
    model: (req, caller) => resolve(req.model, caller),
    // the least any audio costs: one unit of the points' rounding
    least: (model) => (model.charsPointsPrice > 0 ? 1e-6 : 0),
    async prepare({ req, caller, model }) {
      // 400 for a file that is not audio, before any budget is held or channel called
      const info = await readAudioInfo(req.upload.path);
      const body = createMultipartBody(transcriptionUpstreamFields(req, model), req.upload);
      return { info, body, worstCase: budgeted(caller.limits, { tokens: false }) ? transcriptionPoints(model, durationBound(info, req.upload.bytes)) : 0 };
    },
    async attempt(client, { body }, { model, cancel }) {
      const reply = await client.post({
        path: TRANSCRIPTION_PATH,
        body: () => body.open(),
        contentType: body.contentType,
        headers: { "content-length": String(body.contentLength) },
        signal: cancel,
        model: model.model,
      });
      return { body: await readReply(reply, model.model), headers: reply.headers };
    },
    async respond(answer, plan, { req, model }) {
      const seconds = billedSeconds(plan.info, answerSeconds(answer.body, req.responseFormat), req.upload.bytes);
      const reply = () => new FastResponse(new Uint8Array(answer.body), { headers: transcriptionHeaders(answer.headers, req.responseFormat) });
      return { used: { inputTokens: Math.ceil(seconds), points: transcriptionPoints(model, seconds) }, reply };
    },
  };
}
