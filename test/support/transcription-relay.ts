// A server made of the transcription functions and nothing else (src/audio/): the upload read to a
// temporary file, its duration read, the fields checked, the multipart body sent to each upstream in
// turn until one answers (a fresh body per attempt), the answer passed back — what the pipeline will
// do, minus keys, budgets and the breaker. It removes the file in `finally`, then emits "done".
import { EventEmitter } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { durationBound, readAudioInfo } from "../../src/audio/audio-info.js";
import { createMultipartBody } from "../../src/audio/multipart-body.js";
import { readAudioUpload, type AudioUpload } from "../../src/audio/multipart-upload.js";
import { transcriptionPoints } from "../../src/audio/points.js";
import { answerSeconds, billedSeconds, transcriptionHeaders } from "../../src/audio/transcription-answer.js";
import { TRANSCRIPTION_PATH, parseTranscriptionFields, transcriptionUpstreamFields } from "../../src/audio/transcription-request.js";
import type { SttModelConfig } from "../../src/config/schema.js";
import { GatewayError } from "../../src/http/errors.js";

export interface RelayOutcome {
  status: number;
  code?: string;
  /** bytes the relay's socket had read when the request was over */
  bytesRead: number;
}

export interface TranscriptionRelay {
  url: string;
  /** emits "done" (RelayOutcome) once a request is over and its file removed */
  events: EventEmitter;
  close(): Promise<void>;
}

export interface RelayOptions {
  upstreams: () => string[];
  model: SttModelConfig;
  limitBytes: number;
  dir: string;
}

export async function startTranscriptionRelay(opts: RelayOptions): Promise<TranscriptionRelay> {
  const events = new EventEmitter();
  const server: Server = createServer(async (req, res) => {
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    let upload: AudioUpload | undefined;
    let outcome: Omit<RelayOutcome, "bytesRead"> = { status: 200 };
    try {
      upload = await readAudioUpload({ headers: req.headers, body: req }, { limitBytes: opts.limitBytes, dir: opts.dir });
      const info = await readAudioInfo(upload.path);
      const fields = parseTranscriptionFields(upload.fields);
      const body = createMultipartBody(transcriptionUpstreamFields(fields, opts.model), upload);
      for (const base of opts.upstreams()) {
        const headers = { "content-type": body.contentType, "content-length": String(body.contentLength) };
        const up = await request(`${base}${TRANSCRIPTION_PATH}`, { method: "POST", headers, body: body.open(), signal: abort.signal });
        if (up.statusCode >= 500) {
          await up.body.dump();
          continue; // failover: the next upstream gets a fresh stream of the same body
        }
        const answer = Buffer.from(await up.body.arrayBuffer());
        const seconds = billedSeconds(info, answerSeconds(answer, fields.responseFormat), durationBound(info, upload.bytes));
        res.writeHead(up.statusCode, {
          ...transcriptionHeaders(up.headers, fields.responseFormat),
          "x-billed-seconds": String(seconds),
          "x-points": String(transcriptionPoints(opts.model, seconds)),
        });
        res.end(answer);
        return;
      }
      throw new GatewayError(502, "upstream_error", "every upstream failed");
    } catch (err) {
      const e = err instanceof GatewayError ? err : new GatewayError(502, "upstream_error", "relay failed");
      outcome = { status: e.status, code: e.code };
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(e.status, { "content-type": "application/json", ...e.headers }).end(JSON.stringify(e.toBody()));
      }
    } finally {
      await upload?.remove();
      const report = () => events.emit("done", { ...outcome, bytesRead: req.socket.bytesRead });
      // the byte count is final once the connection is gone (a refused upload's is closed)
      if (outcome.status === 413 && !req.socket.destroyed) req.socket.once("close", report);
      else report();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    events,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
