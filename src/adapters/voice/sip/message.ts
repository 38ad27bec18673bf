import { createHash, randomBytes } from 'node:crypto';

/**
 * SIP messages (RFC 3261), the subset an outbound user agent needs: building requests, parsing
 * responses and requests from the far end, and digest authentication (RFC 2617/8760, MD5).
 */

export interface SipMessage {
  /** For a response: its status code; for a request: 0. */
  status: number;
  reason: string;
  /** For a request: its method; for a response: ''. */
  method: string;
  uri: string;
  /** Header names in lower case; repeated headers keep every value in order. */
  headers: Map<string, string[]>;
  body: string;
}

const COMPACT: Record<string, string> = {
  v: 'via',
  f: 'from',
  t: 'to',
  i: 'call-id',
  m: 'contact',
  l: 'content-length',
  c: 'content-type',
  o: 'event',
};

export function parseMessage(raw: string): SipMessage {
  const split = raw.indexOf('\r\n\r\n');
  const head = split >= 0 ? raw.slice(0, split) : raw;
  const body = split >= 0 ? raw.slice(split + 4) : '';
  const lines = head.split('\r\n');
  const start = lines.shift() ?? '';
  const headers = new Map<string, string[]>();
  let last = '';
  for (const line of lines) {
    if (/^[ \t]/.test(line) && last) {
      // A folded continuation line belongs to the previous header.
      const values = headers.get(last) ?? [];
      values[values.length - 1] = `${values[values.length - 1] ?? ''} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const rawName = line.slice(0, colon).trim().toLowerCase();
    const name = COMPACT[rawName] ?? rawName;
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
    last = name;
  }
  const response = /^SIP\/2\.0 (\d{3}) ?(.*)$/.exec(start);
  if (response) {
    return { status: Number(response[1]), reason: response[2] ?? '', method: '', uri: '', headers, body };
  }
  const request = /^([A-Z]+) (\S+) SIP\/2\.0$/.exec(start);
  if (!request) throw new Error(`not a SIP message: ${start.slice(0, 80)}`);
  return { status: 0, reason: '', method: request[1] ?? '', uri: request[2] ?? '', headers, body };
}

export function header(message: SipMessage, name: string): string | undefined {
  return message.headers.get(name.toLowerCase())?.[0];
}

/** The CSeq method of a message ("1 INVITE" -> INVITE). */
export function cseqMethod(message: SipMessage): string {
  return (header(message, 'cseq') ?? '').split(/\s+/)[1] ?? '';
}

/** The tag parameter of a From or To header. */
export function tagOf(value: string | undefined): string | undefined {
  return /;\s*tag=([^;>\s]+)/i.exec(value ?? '')?.[1];
}

export function serialize(startLine: string, headers: Array<[string, string | number]>, body = ''): string {
  const lines = headers.map(([name, value]) => `${name}: ${value}`);
  lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${startLine}\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/**
 * The response to a request: its Via, From, To, Call-ID and CSeq copied back (RFC 3261 8.2.6),
 * then `extra` headers and a body.
 */
export function responseTo(
  request: SipMessage,
  code: number,
  reason: string,
  extra: Array<[string, string]> = [],
  body = '',
): string {
  return serialize(
    `SIP/2.0 ${code} ${reason}`,
    [
      ...(request.headers.get('via') ?? []).map((value): [string, string] => ['Via', value]),
      ['From', header(request, 'from') ?? ''],
      ['To', header(request, 'to') ?? ''],
      ['Call-ID', header(request, 'call-id') ?? ''],
      ['CSeq', header(request, 'cseq') ?? ''],
      ...extra,
    ],
    body,
  );
}

export const newTag = () => randomBytes(6).toString('hex');
export const newBranch = () => `z9hG4bK${randomBytes(8).toString('hex')}`;
export const newCallId = (host: string) => `${randomBytes(12).toString('hex')}@${host}`;

export interface DigestChallenge {
  realm: string;
  nonce: string;
  opaque?: string;
  algorithm?: string;
  qop?: string;
}

/** The parameters of a WWW-Authenticate or Proxy-Authenticate header. */
export function parseChallenge(value: string): DigestChallenge | null {
  if (!/^digest\s/i.test(value)) return null;
  const params: Record<string, string> = {};
  for (const match of value.slice(7).matchAll(/(\w+)=("([^"]*)"|[^,\s]+)/g)) {
    params[(match[1] ?? '').toLowerCase()] = match[3] ?? match[2] ?? '';
  }
  if (!params.realm || !params.nonce) return null;
  return {
    realm: params.realm,
    nonce: params.nonce,
    ...(params.opaque ? { opaque: params.opaque } : {}),
    ...(params.algorithm ? { algorithm: params.algorithm } : {}),
    ...(params.qop ? { qop: params.qop } : {}),
  };
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

/** The Authorization (or Proxy-Authorization) value answering a digest challenge. */
export function digestAuthorization(
  challenge: DigestChallenge,
  credentials: { username: string; password: string },
  method: string,
  uri: string,
  nonceCount = 1,
  cnonce = randomBytes(8).toString('hex'),
): string {
  if (challenge.algorithm && challenge.algorithm.toUpperCase() !== 'MD5') {
    throw new Error(`digest algorithm ${challenge.algorithm} is not supported`);
  }
  const ha1 = md5(`${credentials.username}:${challenge.realm}:${credentials.password}`);
  const ha2 = md5(`${method}:${uri}`);
  const qop = challenge.qop
    ?.split(',')
    .map((q) => q.trim())
    .includes('auth')
    ? 'auth'
    : undefined;
  const nc = nonceCount.toString(16).padStart(8, '0');
  const response = qop
    ? md5(`${ha1}:${challenge.nonce}:${nc}:${cnonce}:${qop}:${ha2}`)
    : md5(`${ha1}:${challenge.nonce}:${ha2}`);
  const parts = [
    `username="${credentials.username}"`,
    `realm="${challenge.realm}"`,
    `nonce="${challenge.nonce}"`,
    `uri="${uri}"`,
    `response="${response}"`,
    'algorithm=MD5',
    ...(challenge.opaque ? [`opaque="${challenge.opaque}"`] : []),
    ...(qop ? [`qop=${qop}`, `nc=${nc}`, `cnonce="${cnonce}"`] : []),
  ];
  return `Digest ${parts.join(', ')}`;
}

/** An SDP offer for one audio stream in PCMU and PCMA (RFC 4566, 3264). */
export function sdpOffer(address: string, rtpPort: number, sessionId: number = Date.now()): string {
  return [
    'v=0',
    `o=outdial ${sessionId} ${sessionId} IN IP4 ${address}`,
    's=outdial',
    `c=IN IP4 ${address}`,
    't=0 0',
    `m=audio ${rtpPort} RTP/AVP 0 8 101`,
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:8 PCMA/8000',
    'a=rtpmap:101 telephone-event/8000',
    'a=fmtp:101 0-15',
    'a=ptime:20',
    'a=sendrecv',
    '',
  ].join('\r\n');
}

export interface SdpMedia {
  address: string;
  port: number;
  /** The first payload type of the answer that we offered and can speak: 0 (PCMU) or 8 (PCMA). */
  payloadType: 0 | 8;
  /**
   * The payload type the answer gave RFC 4733 telephone-events (`a=rtpmap:<pt> telephone-event/8000`
   * on one of its formats), or null when it did not take them: no DTMF can be sent then.
   */
  telephoneEvent: number | null;
}

/**
 * Where and how to send audio, from the far end's SDP answer: the audio stream's connection
 * address (media level before session level) and port, and the codec it chose. Null when the
 * answer has no usable audio stream (none, port 0, or no codec we speak).
 */
export function parseSdpAnswer(body: string): SdpMedia | null {
  let sessionAddress: string | null = null;
  let mediaAddress: string | null = null;
  let port: number | null = null;
  let formats: string[] = [];
  let inAudio = false;
  const events: string[] = [];
  for (const line of body.split(/\r?\n/)) {
    const rtpmap = /^a=rtpmap:(\d+) telephone-event\/8000/i.exec(line);
    if (rtpmap && inAudio) {
      events.push(rtpmap[1] ?? '');
      continue;
    }
    const connection = /^c=IN IP4 (\S+)/.exec(line);
    if (connection) {
      if (inAudio) mediaAddress = connection[1] ?? null;
      else if (port === null) sessionAddress = connection[1] ?? null;
      continue;
    }
    const media = /^m=(\w+) (\d+)(?:\/\d+)? RTP\/AVP((?: \d+)*)/.exec(line);
    if (media) {
      if (inAudio || port !== null) break; // only the first audio stream counts
      inAudio = media[1] === 'audio';
      if (inAudio) {
        port = Number(media[2]);
        formats = (media[3] ?? '').trim().split(/\s+/);
      }
    }
  }
  const address = mediaAddress ?? sessionAddress;
  const payloadType = formats.find((format) => format === '0' || format === '8');
  if (!address || !port || payloadType === undefined) return null;
  const telephoneEvent = events.find((event) => formats.includes(event));
  return {
    address,
    port,
    payloadType: payloadType === '0' ? 0 : 8,
    telephoneEvent: telephoneEvent === undefined ? null : Number(telephoneEvent),
  };
}
