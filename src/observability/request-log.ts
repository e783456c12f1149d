// The request log: one line per finished request (and a few operational events), written through
// the gateway's logger (./logger.ts). It carries names and numbers only — never a key, token, uid or
// message content — so it is safe to ship to any log store.
import type { Logger } from "pino";
import { errorFields } from "./logger.js";
import { silentObserver, type Observer, type RequestRecord, type ShareCallbackOutcome } from "./observer.js";

const FAILED_CALLBACK: ShareCallbackOutcome[] = ["error", "retry", "dropped"];

export function createRequestLog(logger: Logger): Observer {
  // the events it logs; the others it does not hear (processError: src/main.ts logs it with its stack)
  return {
    ...silentObserver,

    requestFinished(r: RequestRecord) {
      const level = r.status >= 500 ? "error" : r.status >= 400 || r.pointsOverHold !== undefined ? "warn" : "info";
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          requestId: r.requestId,
          route: r.route,
          method: r.method,
          status: r.status,
          app: r.appId,
          keyName: r.keyName,
          shareId: r.shareId,
          model: r.model,
          channel: r.channel,
          attempts: r.attempts,
          stream: r.stream,
          inputTokens: r.inputTokens,
          outputTokens: r.outputTokens,
          points: r.points,
          pointsOverHold: r.pointsOverHold,
          durationMs: tenths(r.durationMs),
          ttftMs: r.ttftMs === undefined ? undefined : tenths(r.ttftMs),
          errorCode: r.errorCode,
          finishReason: r.finishReason,
          upstreamMessage: r.upstreamMessage,
          traceId: r.traceId,
          spanId: r.spanId,
          err: r.internalError === undefined ? undefined : errorFields(r.internalError),
        },
        "request",
      );
    },

    upstreamFinished(channel, model, outcome) {
      logger.debug({ channel, model, outcome }, "upstream");
    },

    channelState(channel, up) {
      if (up) logger.info({ channel }, "channel up");
      else logger.warn({ channel }, "channel down");
    },

    shareCallback(kind, outcome) {
      if (FAILED_CALLBACK.includes(outcome)) logger.warn({ kind, outcome }, "share callback");
      else logger.debug({ kind, outcome }, "share callback");
    },

    upstreamAttempt(channel, outcome) {
      logger.debug({ channel, outcome }, "upstream attempt");
    },

    configReloaded(ok, notes) {
      if (!ok) logger.error({ problems: notes }, "config refused, the running one is kept");
      else if (notes.length > 0) logger.warn({ notes }, "config reloaded");
      else logger.info("config reloaded");
    },

    channelWrite(op, outcome) {
      if (outcome === "ok") logger.info({ op }, "channel written through the AI Proxy API");
    },
  };
}

const tenths = (ms: number) => Math.round(ms * 10) / 10;
