// The Node HTTP server the gateway listens on, with every wait bounded (docs/configuration.md#server): request
// headers within `headersTimeoutMs`, the whole body within `bodyTimeoutMs` after them, checked every
// second (Node checks every 30 s by default, so a 10 s limit could take 40). Refusals at the HTTP
// layer (400, 408, 413, 431) carry the OpenAI error body and close the connection cleanly.
import { STATUS_CODES, createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Config } from "../config/schema.js";
import { GatewayError } from "./errors.js";

const CHECK_INTERVAL_MS = 1_000;
const KEEP_ALIVE_MS = 5_000;
const CLOSE_AFTER_REFUSAL_MS = 1_000;

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** A server that can stop keeping connections alive: during a drain every answer says
 *  `connection: close` and its connection closes once it is written, so a pooling client never
 *  sends its next request into a gateway that is going away. */
export interface GatewayServer extends Server {
  stopKeepAlive(): void;
}

export function createHttpServer(listener: Listener, server: Config["server"]): GatewayServer {
  // the answers being written, so a drain can reach the ones begun before it
  const active = new Set<ServerResponse>();
  let keepAlive = true;
  const tracked: Listener = (req, res) => {
    if (!keepAlive) res.shouldKeepAlive = false;
    active.add(res);
    res.once("close", () => active.delete(res));
    listener(req, res);
  };
  const http = createServer(
    {
      headersTimeout: server.headersTimeoutMs,
      requestTimeout: server.headersTimeoutMs + server.bodyTimeoutMs,
      connectionsCheckingInterval: CHECK_INTERVAL_MS,
      keepAliveTimeout: KEEP_ALIVE_MS,
    },
    tracked,
  ) as GatewayServer;
  http.on("clientError", answerClientError);
  http.stopKeepAlive = () => {
    keepAlive = false;
    for (const res of active) {
      // not begun: Node writes `connection: close` and closes after it; begun: closed once written
      if (!res.headersSent) res.shouldKeepAlive = false;
      else res.once("finish", () => res.socket?.end());
    }
  };
  return http;
}

/** Node's own answer to a broken request has no body; this one has the OpenAI error body. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  const refusal = refusalFor(err.code);
  // a response already begun cannot be replaced: like Node, only a fresh one is written
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  if (refusal && socket.writable && !inFlight?.headersSent) {
    socket.end(rawResponse(refusal)); // closes once the answer is written
    setTimeout(() => socket.destroy(), CLOSE_AFTER_REFUSAL_MS).unref(); // a reader that never reads
  } else {
    socket.destroy();
  }
}

function refusalFor(code: string | undefined): GatewayError | undefined {
  if (code === "ECONNRESET" || code === "EPIPE") return undefined; // the client is gone: nobody to answer
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return new GatewayError(408, "request_timeout", "The request's headers or body did not arrive in time.");
  }
  if (code === "HPE_HEADER_OVERFLOW") {
    return new GatewayError(431, "request_header_fields_too_large", "The request's headers are too large.");
  }
  if (code === "HPE_CHUNK_EXTENSIONS_OVERFLOW") return new GatewayError(413, "request_too_large", "The request's chunk extensions are too large.");
  return new GatewayError(400, "bad_http_request", "The request is not valid HTTP/1.1.");
}

function rawResponse(error: GatewayError): string {
  const body = JSON.stringify(error.toBody());
  return [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ""}`,
    "content-type: application/json; charset=utf-8",
    `content-length: ${Buffer.byteLength(body)}`,
    "connection: close",
    "",
    body,
  ].join("\r\n");
}
