import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';

/**
 * The SSRF guard of webhook delivery. A customer chooses the URLs outdial posts to, so without it
 * anyone with an API key could make the server reach its own network (a metadata service, an admin
 * port, a database). Two checks, because a name can change its answer between them (DNS rebinding):
 *
 * - `checkWebhookUrl` when a URL is given: the scheme, no credentials, no private IP literal and no
 *   name that can only be local (`localhost`, `*.local`, single labels);
 * - `webhookDispatcher` at each attempt: every address the name resolves to is judged, and the
 *   socket connects only to addresses that were judged. IP literals skip DNS (net.connect does no
 *   lookup for them), so the dispatcher judges those itself, and `assertDeliverableHost` lets a
 *   caller refuse them before building the request.
 */

/** Why an address is not a public unicast address. */
export type ForbiddenReason =
  | 'invalid address'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'CGNAT'
  | 'link-local'
  | 'site-local'
  | 'unique-local'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'multicast'
  | 'broadcast';

/** Each reason as the end of a sentence a user reads: "10.0.0.5 is a private address". */
const PHRASES: Record<ForbiddenReason, string> = {
  'invalid address': 'not a valid IP address',
  unspecified: 'an unspecified address',
  loopback: 'a loopback address',
  private: 'a private address',
  CGNAT: 'a shared (CGNAT) address',
  'link-local': 'a link-local address',
  'site-local': 'a site-local address',
  'unique-local': 'a unique-local address',
  reserved: 'a reserved address',
  documentation: 'a documentation address',
  benchmarking: 'a benchmarking address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
};

/** The machine code of every refusal, so a sender can tell it from a network failure and not retry. */
export const FORBIDDEN_CODE = 'EWEBHOOKFORBIDDEN';

export class WebhookForbiddenError extends Error {
  override name = 'WebhookForbiddenError';
  readonly code = FORBIDDEN_CODE;
}

// ---------------------------------------------------------------------------------------------
// Parsing

const DECIMAL_OCTET = /^(?:0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/i;

/**
 * Four dotted decimal octets, as an unsigned 32-bit number. Leading zeros are refused: inet_aton
 * reads `010` as octal 8, so accepting them would judge a different address than the one dialled.
 */
function parseIPv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!DECIMAL_OCTET.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

/** Colon-separated hex groups; the last one may be a dotted IPv4 address, worth two groups. */
function parseGroups(text: string, mayEndInIPv4: boolean): number[] | null {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (const [index, part] of parts.entries()) {
    if (HEX_GROUP.test(part)) {
      groups.push(Number.parseInt(part, 16));
      continue;
    }
    const v4 = mayEndInIPv4 && index === parts.length - 1 ? parseIPv4(part) : null;
    if (v4 === null) return null;
    groups.push(Math.floor(v4 / 0x10000), v4 % 0x10000);
  }
  return groups;
}

/** Any RFC 4291 text form (`::` once, trailing dotted IPv4), zone id already removed, as 128 bits. */
function parseIPv6(text: string): bigint | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const compressed = halves.length === 2;
  const head = parseGroups(halves[0] ?? '', !compressed);
  const tail = compressed ? parseGroups(halves[1] ?? '', true) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  // `::` stands for one or more zero groups; without it there must be exactly eight.
  if (compressed ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...new Array<number>(compressed ? missing : 0).fill(0), ...tail];
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

// ---------------------------------------------------------------------------------------------
// Ranges

interface V4Range {
  base: number;
  size: number;
  reason: ForbiddenReason;
}

interface V6Range {
  base: bigint;
  shift: bigint;
  reason: ForbiddenReason;
}

function v4Range(cidr: string, reason: ForbiddenReason): V4Range {
  const [address = '', bits = ''] = cidr.split('/');
  const base = parseIPv4(address);
  if (base === null) throw new Error(`bad IPv4 range ${cidr}`);
  return { base, size: 2 ** (32 - Number(bits)), reason };
}

function v6Range(cidr: string, reason: ForbiddenReason): V6Range {
  const [address = '', bits = ''] = cidr.split('/');
  const base = parseIPv6(address);
  if (base === null) throw new Error(`bad IPv6 range ${cidr}`);
  const shift = BigInt(128 - Number(bits));
  return { base: base >> shift, shift, reason };
}

/** IANA's IPv4 special-purpose registry (RFC 6890 and later), first match wins. */
const V4_RANGES: readonly V4Range[] = [
  v4Range('0.0.0.0/8', 'unspecified'),
  v4Range('10.0.0.0/8', 'private'),
  v4Range('100.64.0.0/10', 'CGNAT'),
  v4Range('127.0.0.0/8', 'loopback'),
  v4Range('169.254.0.0/16', 'link-local'),
  v4Range('172.16.0.0/12', 'private'),
  v4Range('192.0.0.0/24', 'reserved'),
  v4Range('192.0.2.0/24', 'documentation'),
  v4Range('192.88.99.0/24', 'reserved'),
  v4Range('192.168.0.0/16', 'private'),
  v4Range('198.18.0.0/15', 'benchmarking'),
  v4Range('198.51.100.0/24', 'documentation'),
  v4Range('203.0.113.0/24', 'documentation'),
  v4Range('224.0.0.0/4', 'multicast'),
  // Before 240/4, which contains it.
  v4Range('255.255.255.255/32', 'broadcast'),
  v4Range('240.0.0.0/4', 'reserved'),
];

/** IPv6 special-purpose ranges; anything else outside 2000::/3 is refused as reserved. */
const V6_RANGES: readonly V6Range[] = [
  v6Range('fe80::/10', 'link-local'),
  v6Range('fec0::/10', 'site-local'),
  v6Range('fc00::/7', 'unique-local'),
  v6Range('ff00::/8', 'multicast'),
  v6Range('2001:db8::/32', 'documentation'),
  v6Range('3fff::/20', 'documentation'),
  v6Range('2001:2::/48', 'benchmarking'),
  v6Range('2001:10::/28', 'reserved'),
  v6Range('2001:20::/28', 'reserved'),
];

const GLOBAL_UNICAST = v6Range('2000::/3', 'reserved');

function inV6(value: bigint, range: V6Range): boolean {
  return value >> range.shift === range.base;
}

/** Prefixes that carry an IPv4 address; the address they carry decides. */
const MAPPED = v6Range('::ffff:0:0/96', 'reserved');
const COMPATIBLE = v6Range('::/96', 'reserved');
const NAT64 = v6Range('64:ff9b::/96', 'reserved');
const SIX_TO_FOUR = v6Range('2002::/16', 'reserved');
const TEREDO = v6Range('2001::/32', 'reserved');
const LOW_32 = 0xffff_ffffn;

/** The IPv4 address a v6 address stands for, when it embeds one. */
function embeddedIPv4(value: bigint): number | null {
  if (inV6(value, MAPPED) || inV6(value, COMPATIBLE) || inV6(value, NAT64)) return Number(value & LOW_32);
  // 6to4: 2002:AABB:CCDD::/48 routes to AA.BB.CC.DD (bits 16..48).
  if (inV6(value, SIX_TO_FOUR)) return Number((value >> 80n) & LOW_32);
  // Teredo: the client's address is the last 32 bits, inverted (RFC 4380).
  if (inV6(value, TEREDO)) return Number(~value & LOW_32);
  return null;
}

function classifyIPv4(value: number): ForbiddenReason | null {
  for (const range of V4_RANGES) {
    if (value >= range.base && value < range.base + range.size) return range.reason;
  }
  return null;
}

function classifyIPv6(value: bigint): ForbiddenReason | null {
  if (value === 0n) return 'unspecified';
  if (value === 1n) return 'loopback';
  const v4 = embeddedIPv4(value);
  if (v4 !== null) return classifyIPv4(v4);
  for (const range of V6_RANGES) {
    if (inV6(value, range)) return range.reason;
  }
  // Only 2000::/3 is allocated for global unicast; IANA reserves the rest.
  return inV6(value, GLOBAL_UNICAST) ? null : 'reserved';
}

/**
 * Null for a public unicast address, else why not. Takes IPv4 dotted quads and any IPv6 text form,
 * with or without brackets or a zone id (`fe80::1%eth0`). Addresses that embed an IPv4 address
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`, `64:ff9b::a00:1`, `2002:7f00:1::`) are judged by it.
 */
export function isForbiddenAddress(ip: string): ForbiddenReason | null {
  const literal = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const zoneAt = literal.indexOf('%');
  const bare = zoneAt === -1 ? literal : literal.slice(0, zoneAt);
  const family = isIP(bare);
  if (family === 4 && zoneAt === -1) {
    const value = parseIPv4(bare);
    return value === null ? 'invalid address' : classifyIPv4(value);
  }
  if (family === 6 && zoneAt !== literal.length - 1) {
    const value = parseIPv6(bare);
    return value === null ? 'invalid address' : classifyIPv6(value);
  }
  return 'invalid address';
}

/** The address in a URL hostname (brackets removed), or null when the host is a name. */
function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}

// ---------------------------------------------------------------------------------------------
// Request time

/** Longer URLs are refused; 2048 is what browsers and most receivers handle without trouble. */
const MAX_URL_LENGTH = 2048;

/**
 * Suffixes that only resolve inside a network: .localhost (RFC 6761), .local (mDNS, RFC 6762),
 * .internal (reserved by ICANN for private use) and .home.arpa (RFC 8375).
 */
const LOCAL_SUFFIXES = ['.localhost', '.local', '.internal', '.home.arpa'];

export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** The check when a webhook URL is given: its reason is a sentence for the user. */
export function checkWebhookUrl(raw: string, options: { allowPrivate: boolean }): WebhookUrlCheck {
  if (raw.length > MAX_URL_LENGTH) {
    return { ok: false, reason: `webhook URLs may be at most ${MAX_URL_LENGTH} characters long` };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'the webhook URL is not a valid absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, reason: 'webhook URLs must use http or https' };
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, reason: 'webhook URLs must not contain a username or password' };
  }
  if (url.hostname === '') return { ok: false, reason: 'the webhook URL has no host' };
  if (options.allowPrivate) return { ok: true, url };

  const ip = ipLiteral(url.hostname);
  if (ip !== null) {
    const reason = isForbiddenAddress(ip);
    return reason === null ? { ok: true, url } : { ok: false, reason: `${ip} is ${PHRASES[reason]}` };
  }
  // `localhost.` is `localhost`: a trailing dot only marks the name as absolute.
  const name = url.hostname.endsWith('.') ? url.hostname.slice(0, -1) : url.hostname;
  if (name === 'localhost' || LOCAL_SUFFIXES.some((suffix) => name.endsWith(suffix))) {
    return { ok: false, reason: `${name} is a local host name, not a public one` };
  }
  if (!name.includes('.')) {
    return { ok: false, reason: `${name || url.hostname} has no dot, so it is not a public host name` };
  }
  return { ok: true, url };
}

/**
 * Throws a WebhookForbiddenError for a URL that is not http(s), or whose host is an IP literal that
 * is not public. Names are left to the dispatcher's lookup, which judges the addresses connected to.
 */
export function assertDeliverableHost(url: URL, allowPrivate: boolean): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new WebhookForbiddenError(`webhook URLs must use http or https, not ${url.protocol}`);
  }
  if (allowPrivate) return;
  const ip = ipLiteral(url.hostname);
  const reason = ip === null ? null : isForbiddenAddress(ip);
  if (reason !== null) throw new WebhookForbiddenError(`webhook host ${ip} is ${PHRASES[reason]}`);
}

// ---------------------------------------------------------------------------------------------
// Connect time

/** A resolver with the shape of `dns.lookup(hostname, { all: true }, callback)`. */
export type LookupFn = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** `dns.lookup` as net.connect and tls.connect call their `lookup` option. */
export type GuardedLookup = (
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

/**
 * A `lookup` for net.connect that resolves every address of the name and refuses them all when any
 * one is not public: refusing on the first alone would let happy eyeballs or a retry reach a
 * private second address. The socket then connects only to addresses judged here.
 */
export function guardedLookup(options: { allowPrivate: boolean; resolve?: LookupFn }): GuardedLookup {
  const resolve: LookupFn = options.resolve ?? dnsLookup;
  return (hostname, lookupOptions, callback) => {
    const wantsAll = lookupOptions.all === true;
    const fail = (error: NodeJS.ErrnoException) => callback(error, wantsAll ? [] : '');
    const answer = (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (error) return fail(error);
      if (!options.allowPrivate) {
        for (const { address } of addresses) {
          const reason = isForbiddenAddress(address);
          if (reason !== null) {
            return fail(
              new WebhookForbiddenError(
                `webhook host ${hostname} resolves to ${address}, ${PHRASES[reason]}`,
              ),
            );
          }
        }
      }
      const first = addresses[0];
      if (first === undefined) {
        return fail(
          Object.assign(new Error(`webhook host ${hostname} has no address`), { code: 'ENOTFOUND' }),
        );
      }
      if (wantsAll) return callback(null, addresses);
      return callback(null, first.address, first.family);
    };
    try {
      resolve(hostname, { ...lookupOptions, all: true }, answer);
    } catch (error) {
      fail(error instanceof Error ? error : new Error(String(error)));
    }
  };
}

/**
 * The undici Agent of webhook delivery. Names go through `guardedLookup`; IP literals, which
 * net.connect never looks up, are judged here before a socket is opened.
 */
export function webhookDispatcher(options: {
  allowPrivate: boolean;
  resolve?: LookupFn;
  connectTimeoutMs?: number;
}): Agent {
  const connect = buildConnector({
    lookup: guardedLookup(options),
    ...(options.connectTimeoutMs === undefined ? {} : { timeout: options.connectTimeoutMs }),
  });
  return new Agent({
    connect: (connectOptions, callback) => {
      // undici hands over IPv6 hostnames without their brackets.
      const ip = options.allowPrivate ? null : ipLiteral(connectOptions.hostname);
      const reason = ip === null ? null : isForbiddenAddress(ip);
      if (reason !== null) {
        callback(new WebhookForbiddenError(`webhook host ${ip} is ${PHRASES[reason]}`), null);
        return;
      }
      connect(connectOptions, callback);
    },
  });
}
