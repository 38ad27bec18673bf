import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyService } from '../../services/keys.js';

/**
 * Browser sessions of the dashboard. Signing in exchanges an API key for a session cookie
 * (httpOnly, SameSite=Lax, Secure over https) holding a random token; the session itself is a row
 * in the database (see KeyService.startSession), checked on every request: signing out deletes it,
 * so a copied cookie stops working at once, and revoking the key ends every session made with it. Forms carry a CSRF token: an HMAC of a random per-browser
 * value kept in its own httpOnly cookie; a POST whose token or Origin does not match is refused.
 */
export const SESSION_COOKIE = 'outdial_session';
export const CSRF_COOKIE = 'outdial_csrf';
const SESSION_HOURS = 12;

export interface DashboardSession {
  userId: string;
  keyId: string;
}

export function parseCookies(header: string | undefined): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    const name = part.slice(0, index).trim();
    const value = part.slice(index + 1).trim();
    try {
      cookies[name] = decodeURIComponent(value);
    } catch {
      // A malformed cookie is ignored, as if it were absent.
    }
  }
  return cookies;
}

function cookie(
  name: string,
  value: string,
  options: { maxAge: number; secure: boolean; sameSite: string },
): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    'Path=/',
    'HttpOnly',
    `SameSite=${options.sameSite}`,
    `Max-Age=${options.maxAge}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

export class Sessions {
  private readonly key: Uint8Array;

  constructor(
    private readonly keys: KeyService,
    jwtSecret: string,
    private readonly secureCookies: boolean,
  ) {
    this.key = new TextEncoder().encode(`${jwtSecret}:dashboard-session`);
  }

  /** Signs in with an API key: the session, or null when the key is not valid. */
  async signIn(apiKey: string, reply: FastifyReply): Promise<DashboardSession | null> {
    const auth = await this.keys.authenticate(apiKey.trim());
    if (!auth) return null;
    const token = await this.keys.startSession(auth, SESSION_HOURS * 3_600_000);
    this.appendCookie(
      reply,
      cookie(SESSION_COOKIE, token, {
        maxAge: SESSION_HOURS * 3600,
        secure: this.secureCookies,
        sameSite: 'Lax',
      }),
    );
    return auth;
  }

  /** Ends the session on the server (whoever holds a copy of the cookie) and clears the cookie. */
  async signOut(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = parseCookies(request.headers.cookie)[SESSION_COOKIE];
    if (token) await this.keys.endSession(token);
    this.appendCookie(
      reply,
      cookie(SESSION_COOKIE, '', { maxAge: 0, secure: this.secureCookies, sameSite: 'Lax' }),
    );
  }

  /** The request's session, if its cookie names a live session and the key it was made with still works. */
  async read(request: FastifyRequest): Promise<DashboardSession | null> {
    const token = parseCookies(request.headers.cookie)[SESSION_COOKIE];
    if (!token) return null;
    return this.keys.session(token);
  }

  /** The CSRF token for this browser's forms (setting its cookie on first use). */
  csrfToken(request: FastifyRequest, reply: FastifyReply): string {
    let seed = parseCookies(request.headers.cookie)[CSRF_COOKIE];
    if (!seed || !/^[A-Za-z0-9_-]{20,64}$/.test(seed)) {
      seed = randomBytes(24).toString('base64url');
      this.appendCookie(
        reply,
        cookie(CSRF_COOKIE, seed, { maxAge: 7 * 86400, secure: this.secureCookies, sameSite: 'Strict' }),
      );
      // Later reads in this request see the new seed.
      request.headers.cookie = `${request.headers.cookie ? `${request.headers.cookie}; ` : ''}${CSRF_COOKIE}=${seed}`;
    }
    return this.sign(seed);
  }

  /** True when a form's token matches this browser's seed and the request comes from this site. */
  checkCsrf(request: FastifyRequest, given: unknown): boolean {
    const origin = request.headers.origin;
    if (origin && origin !== 'null' && !this.sameOrigin(request)) return false;
    const seed = parseCookies(request.headers.cookie)[CSRF_COOKIE];
    if (!seed || typeof given !== 'string') return false;
    const expected = Buffer.from(this.sign(seed));
    const actual = Buffer.from(given);
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }

  /**
   * True when the request's Origin is this server (its host, as the browser reached it). A
   * WebSocket carries no CSRF token, so its Origin is required: browsers always send one.
   */
  sameOrigin(request: FastifyRequest): boolean {
    const origin = request.headers.origin;
    if (!origin) return false;
    try {
      return new URL(origin).host === request.headers.host;
    } catch {
      return false;
    }
  }

  private sign(seed: string): string {
    return createHmac('sha256', this.key).update(`csrf:${seed}`).digest('base64url');
  }

  private appendCookie(reply: FastifyReply, value: string): void {
    const existing = reply.getHeader('set-cookie');
    const list = Array.isArray(existing) ? existing : existing ? [String(existing)] : [];
    reply.header('set-cookie', [...list, value]);
  }
}
