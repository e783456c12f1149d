// The client's address, for limits per client (docs/configuration.md#behind-a-proxy): the socket's peer, or, behind
// `server.trustProxy` proxies, the X-Forwarded-For entry the farthest trusted proxy appended (each
// proxy appends the address it was called from, so the entries before that one are the client's own
// words). An IPv6 address counts by its /64: a host is given a whole /64 and could otherwise take a
// fresh address for every call.
import { isIPv4, isIPv6 } from "node:net";
import type { H3Event } from "h3";

/** `a.b.c.d`, `x:x:x:x::/64`, or `unknown` when the request has no socket (an in-process call). */
export function clientAddress(event: H3Event, trustedHops: number): string {
  const peer = (event.req as { ip?: string }).ip;
  if (trustedHops === 0) return addressKey(peer) ?? "unknown";
  const forwarded = (event.req.headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
  const chain = [...forwarded, peer ?? ""];
  return addressKey(chain[Math.max(0, chain.length - 1 - trustedHops)]) ?? addressKey(peer) ?? "unknown";
}

function addressKey(address: string | undefined): string | undefined {
  if (!address) return undefined;
  const v4 = address.toLowerCase().startsWith("::ffff:") ? address.slice(7) : address;
  if (isIPv4(v4)) return v4;
  const v6 = address.split("%")[0]!; // a zone index names the interface, not the host
  return isIPv6(v6) ? `${prefix64(v6)}::/64` : undefined;
}

/** The first four groups of an IPv6 address, written short. */
function prefix64(address: string): string {
  const [head = "", tail] = address.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(":");
}
