// A request whose body is still arriving: its head and the first half of its body sent over a raw
// socket, the rest never; and the gateway's count of requests in flight, to know it is being read.
import { once } from "node:events";
import { connect, type Socket } from "node:net";

export interface HalfRequest {
  path: string;
  /** header lines, each ending with \r\n (a key, say) */
  headers: string;
  body: unknown;
}

/** Sends `req`'s head and the first half of its JSON body, then waits. */
export async function halfBody(url: string, req: HalfRequest): Promise<Socket> {
  const { port } = new URL(url);
  const socket = connect(Number(port), "127.0.0.1");
  socket.on("error", () => {});
  await once(socket, "connect");
  const body = JSON.stringify(req.body);
  socket.write(`POST ${req.path} HTTP/1.1\r\nhost: x\r\n${req.headers}content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, body.length / 2)}`);
  return socket;
}

/** The gauge of requests in flight, as /metrics shows it (its own scrape is not counted there). */
export async function inflight(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^sluice_inflight_requests (\d+)/m.exec(text)?.[1] ?? NaN);
}
