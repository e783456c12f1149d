// Where a channel may connect (docs/configuration.md#top-level `allowLinkLocalChannels`): not to a
// link-local or cloud-metadata address — a channel written through FastGPT's AI Proxy API would hand
// that host's answers (and the channel key) to whoever wrote it — unless the operator allows it.
// Loopback and private ranges stay allowed: private model servers live there. A write's base URL is
// checked, with what its host resolves to; every connection is checked again after DNS, since a name
// may resolve elsewhere later. Redirects are never followed: undici's request and Pool do not.
import { promises as dns, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Agent, buildConnector, type Dispatcher } from "undici";

/** Resolves a host name to every address it has (tests give one that never asks real DNS). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

const REFUSED = new BlockList();
REFUSED.addSubnet("169.254.0.0", 16, "ipv4"); // link-local, and AWS's, GCP's and Azure's metadata at .169.254
REFUSED.addSubnet("fe80::", 10, "ipv6"); // link-local
REFUSED.addSubnet("64:ff9b::a9fe:0", 112, "ipv6"); // 169.254.0.0/16 through a NAT64 gateway
REFUSED.addAddress("fd00:ec2::254", "ipv6"); // AWS's metadata over IPv6
REFUSED.addAddress("100.100.100.200", "ipv4"); // Alibaba Cloud's metadata

/** Is `address` (an IP) link-local or a cloud's metadata address? IPv4-mapped IPv6 counts as its IPv4. */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && REFUSED.check(address, family === 6 ? "ipv6" : "ipv4");
}

export interface AddressGuard {
  /** Why `url` may not be a channel's base URL (its host is, or resolves to, a refused address), or undefined. */
  refusal(url: string): Promise<string | undefined>;
  /** undici's connector for a channel's pool: refuses such an address after DNS. */
  connect: buildConnector.connector;
  /** for the health check and the engine scrape, over the same connector */
  dispatcher: Dispatcher;
  /** ends its health-check and scrape connections (a check in flight fails: it is the gateway's close) */
  close(): Promise<void>;
}

export interface GuardOptions {
  /** `allowLinkLocalChannels`, read at every check (a reload changes it) */
  allowed: () => boolean;
  resolve?: Resolve;
}

const refusedError = (host: string) =>
  Object.assign(new Error(`${host} is a link-local or cloud-metadata address: channels do not connect there (allowLinkLocalChannels)`), { code: "ELINKLOCAL" });

export function createAddressGuard(opts: GuardOptions): AddressGuard {
  const resolve = opts.resolve ?? ((hostname: string) => dns.lookup(hostname, { all: true }));
  const lookup: LookupFunction = (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        if (!opts.allowed() && found.some((a) => isRefusedAddress(a.address))) return callback(refusedError(hostname), "", 0);
        const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
        const fit = found.filter((a) => family === 0 || a.family === family);
        if (fit.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), "", 0);
        if (options.all) return callback(null, fit);
        callback(null, fit[0]!.address, fit[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };
  const base = buildConnector({ lookup });
  // an IP literal is connected to without a lookup: checked here
  const connect: buildConnector.connector = (options, callback) => {
    const host = bare(options.hostname);
    if (!opts.allowed() && isRefusedAddress(host)) return callback(refusedError(host), null);
    return base(options, callback);
  };
  const dispatcher = new Agent({ connect });

  async function refusal(url: string): Promise<string | undefined> {
    if (opts.allowed()) return undefined;
    let host: string;
    try {
      host = bare(new URL(url).hostname);
    } catch {
      return undefined; // not a URL: the config check says so
    }
    if (isRefusedAddress(host)) return `${host} is a link-local or cloud-metadata address (allowLinkLocalChannels in config.json allows it)`;
    if (isIP(host) !== 0) return undefined;
    // a name that does not resolve now is let through: every connection is checked after DNS
    const found = await resolve(host).catch(() => []);
    const refused = found.find((a) => isRefusedAddress(a.address));
    return refused && `${host} resolves to ${refused.address}, a link-local or cloud-metadata address (allowLinkLocalChannels in config.json allows it)`;
  }

  return { refusal, connect, dispatcher, close: () => dispatcher.destroy() };
}

/** A URL's hostname without the brackets of an IPv6 literal. */
function bare(hostname: string): string {
  return hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
}
