import { randomBytes } from 'node:crypto';

/**
 * Prefixed, time-sortable identifiers: 10 Crockford base32 characters of milliseconds (good until
 * the year 10889) and 16 of randomness (80 bits), so ids sort by creation time in indexes and logs.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix = 'usr' | 'key' | 'agt' | 'cnt' | 'call' | 'bat' | 'evt' | 'dlv' | 'trk';

let lastMs = 0;
let lastRandom = new Uint8Array(10);

function encodeTime(ms: number): string {
  let out = '';
  let rest = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  // 80 bits -> 16 characters of 5 bits each.
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return out;
}

/** Within one millisecond the random part is incremented, so ids made in one process stay ordered. */
function nextRandom(ms: number): Uint8Array {
  if (ms !== lastMs) {
    lastMs = ms;
    lastRandom = new Uint8Array(randomBytes(10));
    return lastRandom;
  }
  const next = new Uint8Array(lastRandom);
  for (let i = next.length - 1; i >= 0; i--) {
    const byte = next[i] ?? 0;
    if (byte < 255) {
      next[i] = byte + 1;
      break;
    }
    next[i] = 0;
  }
  lastRandom = next;
  return next;
}

export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  return `${prefix}_${encodeTime(now)}${encodeRandom(nextRandom(now))}`;
}

export function hasPrefix(id: string, prefix: IdPrefix): boolean {
  return id.startsWith(`${prefix}_`);
}
