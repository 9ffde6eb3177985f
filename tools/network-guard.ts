/**
 * Outbound requests made on a user's behalf (a model's tool calls, webhook deliveries) reach public
 * addresses only (unless the deployment allows private ones), so a tool definition or a webhook URL cannot
 * turn the worker into a way into the cluster, the cloud metadata service or the loopback interface.
 *
 * The address is checked where the socket gets it: the lookup that the connection itself uses refuses
 * private answers, so a name cannot resolve to a public address for a check and to a private one for
 * the connection (DNS rebinding). Literal IP hosts never reach a lookup and are checked before connecting.
 *
 * A deployment may also name the only networks such requests may reach (`AGENTPLANE_OUTBOUND_NETWORKS`, CIDR
 * blocks): an egress rule of the platform's own, on top of the rule on private addresses, checked the same way.
 */
import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { outboundLookups, type Resolve } from './outbound-lookups.js';

/** What an outbound request made for a run needs to know. */
export interface Reach {
  /** The project it is made for: its name lookups take their turn among that project's. */
  projectId: string;
  /** The run's signal: aborting it aborts the request. */
  signal: AbortSignal;
  /** Private, loopback and link-local targets are allowed (local development and tests). */
  allowPrivate: boolean;
}

/** The deployment's choice: `AGENTPLANE_TOOLS_ALLOW_PRIVATE=true` lets tools reach private addresses. */
export function allowPrivateFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.AGENTPLANE_TOOLS_ALLOW_PRIVATE === 'true';
}

/**
 * A target refused because it is (or resolved to) an address that is not public, or one outside the networks
 * the deployment lets outbound requests reach.
 */
export class PrivateTargetError extends Error {
  readonly code = 'ERR_PRIVATE_TARGET';

  constructor(
    readonly host: string,
    readonly address: string,
    rule: 'public' | 'outbound-networks' = 'public',
  ) {
    const what = address === host ? `${host} is` : `${host} resolves to ${address}, which is`;
    super(
      rule === 'public'
        ? `${what} not a public address; only public addresses may be reached`
        : `${what} outside the networks this deployment reaches (AGENTPLANE_OUTBOUND_NETWORKS)`,
    );
    this.name = 'PrivateTargetError';
  }
}

type Network = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** `AGENTPLANE_OUTBOUND_NETWORKS` as CIDR blocks, or undefined when unset (any network the other rules allow). */
export function outboundNetworksFromEnv(env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  const text = env.AGENTPLANE_OUTBOUND_NETWORKS?.trim();
  return text ? text.split(',').map((block) => block.trim()) : undefined;
}

/** Why a list of CIDR blocks is not one; null when it is. */
export function outboundNetworksProblem(blocks: string[]): string | null {
  const bad = blocks.find((block) => !ipaddr.isValidCIDR(block));
  return bad === undefined ? null : `'${bad}' is not a CIDR block`;
}

let outbound: { text: string | undefined; networks: Network[] | undefined } | undefined;

/**
 * The deployment's outbound networks, read from the environment where they are used (and again when it
 * changes). A value that is not a list of CIDR blocks, which the configuration refuses at start, reaches none.
 */
function outboundNetworks(): Network[] | undefined {
  const text = process.env.AGENTPLANE_OUTBOUND_NETWORKS;
  if (outbound && outbound.text === text) return outbound.networks;
  const blocks = outboundNetworksFromEnv();
  const networks = blocks && (outboundNetworksProblem(blocks) === null ? blocks.map((block) => ipaddr.parseCIDR(block)) : []);
  outbound = { text, networks };
  return networks;
}

/** True when the deployment names no outbound networks, or `address` is in one of them. */
export function isOutboundAllowed(address: string): boolean {
  const networks = outboundNetworks();
  if (!networks) return true;
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  return networks.some(([network, bits]) => parsed.kind() === network.kind() && parsed.match(network, bits));
}

/** The error refusing `address` (reached as `host`), or undefined when it may be reached. */
function refusal(host: string, address: string, allowPrivate: boolean): PrivateTargetError | undefined {
  if (!allowPrivate && !isPublicAddress(address)) return new PrivateTargetError(host, address);
  if (!isOutboundAllowed(address)) return new PrivateTargetError(host, address, 'outbound-networks');
  return undefined;
}

// IPv4-compatible IPv6 (`::a.b.c.d`, deprecated): ipaddr.js counts it as unicast, but a host that still
// tunnels it would reach the IPv4 address it carries, whatever that is.
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');

/**
 * True for a globally routable unicast address. Everything else (loopback, private, link-local with the
 * metadata service, carrier-grade NAT, unique-local, multicast, unspecified, and the IPv6 ranges that
 * embed an IPv4 address such as 6to4, NAT64 and IPv4-compatible addresses) is refused. An IPv4-mapped
 * IPv6 address is judged as the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  if (parsed instanceof ipaddr.IPv6 && parsed.match(IPV4_COMPATIBLE)) return false;
  return parsed.range() === 'unicast';
}

/** The host of a URL without the brackets of an IPv6 literal. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * `text` parsed as a URL, or why it is not one. The document's URL pattern admits every URL but those whose
 * host has an `xn--` label that does not decode as punycode, which no pattern can tell; the problem says so.
 */
export function parsedUrl(text: string): URL | string {
  try {
    return new URL(text);
  } catch {
    const host = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#:]*)/.exec(text)?.[1] ?? '';
    const label = host.split('.').find((part) => /^xn--/i.test(part));
    return label === undefined ? 'must be an absolute URL' : `${host} is not a host name: its label ${label} is not valid punycode`;
  }
}

/**
 * Why a URL's host is refused before any lookup: a literal IP that is not public, or a `localhost` name.
 * Null when only resolving the name can tell. The URL parser has already turned the other spellings of an
 * IPv4 address (`2130706433`, `0x7f.1`) into dotted quads.
 */
export function literalHostProblem(url: URL): string | null {
  const host = hostOf(url).toLowerCase();
  if (/(^|\.)localhost\.?$/.test(host)) return `${host} is a loopback name`;
  if (isIP(host) !== 0 && !isPublicAddress(host)) return `${host} is not a public address`;
  return null;
}

/**
 * A `lookup` for sockets that fails with PrivateTargetError when any address the name resolves to is not
 * public, or is outside the outbound networks (one such answer is enough to refuse: the connection may pick
 * any of them).
 */
export function guardedLookup(allowPrivate: boolean, resolve: Resolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.map((a) => refusal(hostname, a.address, allowPrivate)).find((error) => error !== undefined);
      if (refused) return callback(refused, '', 0);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      // Node asks for every address when it tries IPv6 and IPv4 in turn (autoSelectFamily), else for one.
      if (options.all) return (callback as (err: null, addresses: LookupAddress[]) => void)(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

export interface OutboundRequest {
  /** The project the request is made for. */
  projectId: string;
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  signal: AbortSignal;
  allowPrivate: boolean;
}

/**
 * Sends one request through the guard and resolves with the response head; the caller reads (or
 * destroys) the body. Redirects are never followed here. A refused target rejects with
 * PrivateTargetError; other failures are the socket's own errors (ECONNREFUSED, ECONNRESET, …).
 */
export function guardedRequest(url: URL, request: OutboundRequest): Promise<http.IncomingMessage> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new Error(`${url.protocol} URLs are not supported`));
  const host = hostOf(url);
  const refused = isIP(host) !== 0 ? refusal(host, host, request.allowPrivate) : undefined;
  if (refused) return Promise.reject(refused);
  const send = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    // Stated for every body: Node frames a DELETE body neither by length nor in chunks on its own.
    const framing = request.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(request.body)) };
    const req = send(url, {
      method: request.method,
      headers: { ...request.headers, ...framing },
      signal: request.signal,
      lookup: guardedLookup(request.allowPrivate, outboundLookups()(request.projectId, request.signal)),
      // A connection of its own: a pooled socket could have been opened under another policy.
      agent: false,
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(request.body);
  });
}
