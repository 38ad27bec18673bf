import { createHmac, timingSafeEqual } from 'node:crypto';
import type { CallStatus } from '../domain/call.js';
import type { Deps } from './deps.js';

/** Expiry is rounded up to the hour: reads within one hour hand out the same URL (players cache it). */
const ROUND_SECONDS = 3600;
/**
 * Calls whose token of the current expiry is kept. A client polling one call's status under load
 * asked for the same HMAC on every read: 7% of the read path's CPU (docs/benchmarks.md, issue 23).
 */
const SIGNED_MAX = 10_000;

/**
 * Signed recording links: `?token=<expiry>.<signature>`, the expiry in Unix seconds and the
 * signature an HMAC of the call id and that expiry, so a link works without the API key until it
 * expires (OUTDIAL_RECORDING_URL_TTL_HOURS, rounded up to the hour) and a changed expiry breaks
 * the signature. Every read of a call issues a fresh link; an expired or altered one is a 404,
 * like a call that is not there.
 */
export class RecordingLinks {
  /** callId -> the token last signed for it and that token's expiry. */
  private readonly signed = new Map<string, { expires: number; token: string }>();

  constructor(private readonly deps: Pick<Deps, 'config' | 'clock' | 'jwtSecret'>) {}

  /** The full URL, or null while the call is up or when it was never answered. */
  url(callId: string, status: CallStatus, duration: number | null): string | null {
    const path = this.path(callId, status, duration);
    return path ? `${this.deps.config.publicUrl}${path}` : null;
  }

  /** The signed path (no host), for pages outdial serves itself. */
  path(callId: string, status: CallStatus, duration: number | null): string | null {
    if (status === 'ONGOING' || !duration) return null;
    return `/api/v1/calls/${callId}/recording.wav?token=${this.token(callId)}`;
  }

  token(callId: string): string {
    const ttl = this.deps.config.recordingUrlTtlHours * 3600;
    const now = Math.floor(this.deps.clock.now().getTime() / 1000);
    const expires = Math.ceil((now + ttl) / ROUND_SECONDS) * ROUND_SECONDS;
    // The same expiry gives the same signature: it is signed once per call per hour.
    const earlier = this.signed.get(callId);
    if (earlier?.expires === expires) return earlier.token;
    const token = `${expires}.${this.sign(callId, expires)}`;
    if (!earlier && this.signed.size >= SIGNED_MAX) {
      const oldest = this.signed.keys().next().value;
      if (oldest !== undefined) this.signed.delete(oldest);
    }
    this.signed.set(callId, { expires, token });
    return token;
  }

  /** True for a token this service issued for this call and whose expiry has not passed. */
  verify(callId: string, token: string): boolean {
    const match = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match?.[1] || !match[2]) return false;
    const expires = Number(match[1]);
    const expected = Buffer.from(this.sign(callId, expires));
    const given = Buffer.from(match[2]);
    if (!(expected.length === given.length && timingSafeEqual(expected, given))) return false;
    return this.deps.clock.now().getTime() < expires * 1000;
  }

  private sign(callId: string, expires: number): string {
    return createHmac('sha256', this.deps.jwtSecret)
      .update(`recording:${callId}:${expires}`)
      .digest('base64url');
  }
}
