import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, isIPv4 } from 'node:net';
import type { LookupFunction } from 'node:net';

/**
 * Outbound requests to URLs that admins (or providers) control, guarded
 * against server-side request forgery.
 *
 * - `isForbiddenAddress` / `addressCategory` decide on one IP address:
 *   loopback, private (RFC 1918, fc00::/7, fec0::/10), link-local
 *   (169.254/16 with cloud metadata, fe80::/10), CGNAT 100.64/10, unspecified,
 *   multicast, broadcast and other reserved ranges are refused; IPv6 forms that
 *   embed an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible
 *   ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by that address.
 * - `checkUrl` decides on a URL before any lookup: https only (http too with
 *   `allowHttp`, for public web pages; http and loopback addresses with
 *   `allowLoopback`, a test-only switch), no credentials, IP-literal hosts
 *   judged directly. The WHATWG URL parser has
 *   already turned decimal, hex and octal IPv4 forms (http://2130706433/,
 *   http://0x7f.1/) into dotted quads, so they are judged as IP literals too.
 * - `guardedRequest` resolves the host once (through an injectable resolver),
 *   refuses the request if any resolved address is forbidden, and connects to
 *   the checked address through a pinned `lookup`: no second DNS lookup that a
 *   rebinding DNS server could answer differently. Redirects are not followed;
 *   `openPinnedRequest` is that connection step alone, for callers that follow
 *   redirects hop by hop (src/net/page-fetch.ts).
 *
 * Node's global fetch (undici) ignores `lookup`; this module uses node:http and
 * node:https on purpose.
 */

export type AddressCategory =
  | 'invalid'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'reserved';

export interface GuardOptions {
  /** Test-only: lets http URLs and loopback addresses through (SSRF_ALLOW_LOOPBACK). */
  allowLoopback?: boolean;
  /**
   * Lets http URLs through as well as https (web pages from search results are
   * often plain http). Changes the scheme rule only: every address rule stays.
   */
  allowHttp?: boolean;
}

type V4 = [number, number, number, number];

function parseV4(ip: string): V4 | null {
  if (!isIPv4(ip)) return null;
  return ip.split('.').map(Number) as V4;
}

/** 8 groups of 16 bits, or null when `ip` is not an IPv6 address. */
function parseV6(ip: string): number[] | null {
  if (isIP(ip) !== 6) return null;
  let text = ip.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    // A dotted IPv4 tail (::ffff:127.0.0.1) becomes two hex groups (::ffff:7f00:1).
    const v4 = parseV4(tail);
    if (!v4) return null;
    text = `${text.slice(0, lastColon + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(halves[0]!);
  const right = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = halves.length === 2 ? 8 - left.length - right.length : 0;
  if (fill < 0) return null;
  const groups = [...left, ...new Array<number>(fill).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function v4Category([a, b, c]: V4, d: number): AddressCategory | null {
  if (a === 0) return 'unspecified'; // 0.0.0.0/8 "this network"; 0.0.0.0 reaches the local host
  if (a === 127) return 'loopback';
  if (a === 10) return 'private';
  if (a === 172 && b >= 16 && b <= 31) return 'private';
  if (a === 192 && b === 168) return 'private';
  if (a === 169 && b === 254) return 'link_local'; // includes 169.254.169.254 (cloud metadata)
  if (a === 100 && b >= 64 && b <= 127) return 'cgnat';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a === 255 && b === 255 && c === 255 && d === 255) return 'broadcast';
  if (a >= 240) return 'reserved';
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return 'reserved'; // IETF protocol assignments, TEST-NET-1
  if (a === 198 && (b === 18 || b === 19)) return 'reserved'; // benchmarking
  if (a === 198 && b === 51 && c === 100) return 'reserved'; // TEST-NET-2
  if (a === 203 && b === 0 && c === 113) return 'reserved'; // TEST-NET-3
  return null;
}

/** Why `ip` must not be connected to, or null when it is a public unicast address. */
export function addressCategory(ip: string): AddressCategory | null {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const address = bare.replace(/%.*$/, ''); // zone id (fe80::1%eth0)
  const v4 = parseV4(address);
  if (v4) return v4Category(v4, v4[3]);
  const g = parseV6(address);
  if (!g) return 'invalid';
  const embedded = (hi: number, lo: number): AddressCategory | null => {
    const quad: V4 = [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
    return v4Category(quad, quad[3]);
  };
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return 'unspecified';
  if (zeros(0, 7) && g[7] === 1) return 'loopback';
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d: judged as the IPv4 address.
  if (zeros(0, 5) && g[5] === 0xffff) return embedded(g[6]!, g[7]!) ?? null;
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return embedded(g[6]!, g[7]!) ?? null;
  // IPv4-compatible ::a.b.c.d (deprecated): judged as the IPv4 address.
  if (zeros(0, 6)) return embedded(g[6]!, g[7]!) ?? 'reserved';
  // NAT64 64:ff9b::/96 reaches the embedded IPv4 address.
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return embedded(g[6]!, g[7]!) ?? null;
  // 6to4 2002:aabb:ccdd::/48 reaches a.b.c.d's network.
  if (g[0] === 0x2002) return embedded(g[1]!, g[2]!) ?? null;
  if (g[0]! >= 0xfc00 && g[0]! <= 0xfdff) return 'private'; // fc00::/7 unique local
  if ((g[0]! & 0xffc0) === 0xfe80) return 'link_local'; // fe80::/10
  if ((g[0]! & 0xffc0) === 0xfec0) return 'private'; // fec0::/10 site-local (deprecated)
  if (g[0]! >= 0xff00) return 'multicast'; // ff00::/8
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'reserved'; // documentation
  if (g[0] === 0x2001 && g[1] === 0) return 'reserved'; // Teredo tunnels to IPv4
  if (g[0] === 0x0100 && zeros(1, 4)) return 'reserved'; // discard-only 100::/64
  return null;
}

/** True when a guarded request must not go to `ip` (loopback passes only with `allowLoopback`). */
export function isForbiddenAddress(ip: string, options: GuardOptions = {}): boolean {
  const category = addressCategory(ip);
  if (category === null) return false;
  return !(category === 'loopback' && options.allowLoopback);
}

export type UrlCheck =
  | { ok: true; url: URL; hostname: string; ipLiteral: boolean }
  | { ok: false; reason: string };

/** The decision on a URL before any DNS lookup. */
export function checkUrl(raw: string | URL, options: GuardOptions = {}): UrlCheck {
  let url: URL;
  try {
    url = new URL(String(raw));
  } catch {
    return { ok: false, reason: 'not a valid URL' };
  }
  const httpAllowed = options.allowHttp || options.allowLoopback;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && httpAllowed)) {
    const allowed = httpAllowed ? 'http and https only' : 'https only';
    return { ok: false, reason: `the ${url.protocol.replace(/:$/, '')} scheme is not allowed (${allowed})` };
  }
  if (url.username || url.password) return { ok: false, reason: 'URLs with credentials are not allowed' };
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!hostname) return { ok: false, reason: 'the URL has no host' };
  const ipLiteral = isIP(hostname) !== 0;
  if (ipLiteral && isForbiddenAddress(hostname, options)) {
    return { ok: false, reason: `${hostname} is a ${addressCategory(hostname)} address` };
  }
  return { ok: true, url, hostname, ipLiteral };
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address; tests inject one to simulate DNS answers. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** The request was refused by the guard before any connection was made. */
export class SsrfBlockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SsrfBlockedError';
  }
}

/** The guard's decision on a URL, DNS included: the one address to connect to, or a refusal. */
export async function resolveGuarded(
  raw: string | URL,
  options: GuardOptions & { resolve?: Resolver } = {},
): Promise<{ url: URL; hostname: string; address: ResolvedAddress }> {
  const check = checkUrl(raw, options);
  if (!check.ok) throw new SsrfBlockedError(check.reason);
  if (check.ipLiteral) {
    return { url: check.url, hostname: check.hostname, address: { address: check.hostname, family: isIP(check.hostname) === 6 ? 6 : 4 } };
  }
  let addresses: ResolvedAddress[];
  try {
    addresses = await (options.resolve ?? systemResolver)(check.hostname);
  } catch (error) {
    throw new SsrfBlockedError(`${check.hostname} did not resolve (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!addresses.length) throw new SsrfBlockedError(`${check.hostname} did not resolve`);
  for (const { address } of addresses) {
    if (isForbiddenAddress(address, options)) {
      throw new SsrfBlockedError(`${check.hostname} resolves to ${address}, a ${addressCategory(address)} address`);
    }
  }
  return { url: check.url, hostname: check.hostname, address: addresses[0]! };
}

export interface GuardedRequestOptions extends GuardOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Overall limit for connecting and reading the answer; default 5000. */
  timeoutMs?: number;
  /** At most this many bytes of the answer are kept; default 64 KiB. */
  maxBytes?: number;
  resolve?: Resolver;
}

export interface GuardedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The address that was connected to. */
  address: string;
}

/**
 * One HTTP(S) request through the guard. Throws `SsrfBlockedError` (nothing was
 * sent) when the URL or any address its host resolves to is refused; other
 * errors are network failures or the timeout.
 */
export async function guardedRequest(raw: string | URL, options: GuardedRequestOptions = {}): Promise<GuardedResponse> {
  const target = await resolveGuarded(raw, options);
  const { address } = target;
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxBytes = options.maxBytes ?? 64 * 1024;
  return new Promise<GuardedResponse>((resolve, reject) => {
    const request = openPinnedRequest(
      target,
      {
        method: options.method ?? 'GET',
        headers: { ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}), ...options.headers },
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          if (size < maxBytes) chunks.push(chunk.subarray(0, maxBytes - size));
          size += chunk.length;
        });
        response.on('end', () => {
          clearTimeout(timer);
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            address: address.address,
          });
        });
        response.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
      },
    );
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end(options.body);
  });
}

/**
 * Opens a request to a target decided by `resolveGuarded`, connecting to its
 * checked address only. The caller writes the body, ends the request and
 * handles its errors; nothing here follows redirects or times out.
 */
export function openPinnedRequest(
  target: { url: URL; hostname: string; address: ResolvedAddress },
  options: { method?: string; headers?: Record<string, string> },
  onResponse?: (response: http.IncomingMessage) => void,
): http.ClientRequest {
  const { url, hostname, address } = target;
  // The connection goes to the checked address only: net calls this instead of DNS.
  const pinned: LookupFunction = (_host, lookupOptions, callback) => {
    if (lookupOptions.all) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: address.address, family: address.family },
      ]);
    } else callback(null, address.address, address.family);
  };
  const transport = url.protocol === 'https:' ? https : http;
  return transport.request(
    {
      protocol: url.protocol,
      host: hostname,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: options.method ?? 'GET',
      headers: options.headers,
      lookup: pinned,
      // TLS still verifies the certificate against the host name (SNI included).
      ...(url.protocol === 'https:' ? { servername: isIP(hostname) ? undefined : hostname } : {}),
      // No pooled sockets: every request connects afresh through the pinned lookup.
      agent: false,
    },
    onResponse,
  );
}
