import { createHash, randomBytes } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { AppError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ApiKeyRow } from '../store/keys.js';
import type { Deps } from './deps.js';

export interface AuthenticatedKey {
  userId: string;
  keyId: string;
}

export interface ApiKeyView {
  id: string;
  userId: string;
  name: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  status: 'active' | 'revoked' | 'expired';
}

interface CachedKey {
  userId: string;
  expiresAt: number | null;
  active: boolean;
  checkedAt: number;
}

const ISSUER = 'outdial';
/**
 * How long a process trusts what it last read of a key row. Revocation is immediate in the process
 * that revoked and reaches the others within this time; the issue allows 60 s, we take half.
 */
export const KEY_CACHE_MS = 30_000;
const KEY_CACHE_MAX = 10_000;

/**
 * API keys are HS256 JWTs (sub = user, jti = key row). The signature proves we issued the token;
 * the row decides whether it still works, so revocation needs no token blacklist.
 */
export class KeyService {
  private readonly secret: Uint8Array;
  private readonly cache = new Map<string, CachedKey>();
  /** Tokens whose signature has been verified: token -> its claims. */
  private readonly verified = new Map<string, { sub: string; jti: string; exp?: number }>();

  constructor(private readonly deps: Pick<Deps, 'store' | 'clock' | 'jwtSecret' | 'logger'>) {
    this.secret = new TextEncoder().encode(deps.jwtSecret);
  }

  async create(
    userId: string,
    options: { name?: string; expiresAt?: Date },
  ): Promise<{ id: string; key: string; view: ApiKeyView }> {
    if (!(await this.deps.store.users.exists(userId))) throw new AppError('NOT_FOUND', 'User not found');
    const now = this.deps.clock.now();
    if (options.expiresAt && options.expiresAt.getTime() <= now.getTime()) {
      throw new AppError('INVALID_REQUEST', 'expiresAt must be in the future', {
        fieldErrors: { expiresAt: ['must be in the future'] },
      });
    }
    const id = newId('key');
    const row = await this.deps.store.keys.insert({
      id,
      user_id: userId,
      name: options.name ?? 'API key',
      expires_at: options.expiresAt ?? null,
    });
    let jwt = new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(userId)
      .setJti(id)
      .setIssuedAt(Math.floor(now.getTime() / 1000));
    if (options.expiresAt) jwt = jwt.setExpirationTime(Math.floor(options.expiresAt.getTime() / 1000));
    return { id, key: await jwt.sign(this.secret), view: toView(row, now) };
  }

  /**
   * What `authenticate` answers when this process's caches alone can tell (a token verified
   * before, its key row read less than KEY_CACHE_MS ago); undefined when something must be read.
   * The API's auth hook answers most requests from here without a promise.
   */
  cachedAuthentication(token: string): AuthenticatedKey | null | undefined {
    const verified = this.verified.get(token);
    if (!verified) return undefined;
    const now = this.deps.clock.now().getTime();
    if (verified.exp !== undefined && verified.exp <= now / 1000) return undefined;
    const cached = this.cache.get(verified.jti);
    if (!cached || now - cached.checkedAt > KEY_CACHE_MS) return undefined;
    return keyWorks(cached, verified.sub, now) ? { userId: verified.sub, keyId: verified.jti } : null;
  }

  /** The key's user, or null for anything that must be answered with 401. */
  async authenticate(token: string): Promise<AuthenticatedKey | null> {
    const known = this.cachedAuthentication(token);
    if (known !== undefined) return known;
    // A token whose signature was checked before is not checked again (the row still is, below):
    // an HMAC per request is most of what a cached read costs.
    const verified = this.verified.get(token);
    const nowSeconds = this.deps.clock.now().getTime() / 1000;
    if (verified && (verified.exp === undefined || verified.exp > nowSeconds)) {
      return (await this.isActive(verified.jti, verified.sub))
        ? { userId: verified.sub, keyId: verified.jti }
        : null;
    }
    let sub: string | undefined;
    let jti: string | undefined;
    let exp: number | undefined;
    try {
      const { payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        currentDate: this.deps.clock.now(),
      });
      sub = payload.sub;
      jti = payload.jti;
      exp = payload.exp;
    } catch (error) {
      if (error instanceof joseErrors.JOSEError || error instanceof TypeError) return null;
      throw error;
    }
    if (!sub || !jti) return null;
    this.verified.set(token, { sub, jti, ...(exp === undefined ? {} : { exp }) });
    if (this.verified.size > KEY_CACHE_MAX) {
      const oldest = this.verified.keys().next().value;
      if (oldest !== undefined) this.verified.delete(oldest);
    }
    return (await this.isActive(jti, sub)) ? { userId: sub, keyId: jti } : null;
  }

  /** Whether a key row still works for its user (cached like every key check; a dashboard session asks this). */
  async isActive(keyId: string, userId: string): Promise<boolean> {
    const now = this.deps.clock.now().getTime();
    let cached = this.cache.get(keyId);
    if (!cached || now - cached.checkedAt > KEY_CACHE_MS) {
      cached = await this.load(keyId, now);
      if (!cached) return false;
    }
    return keyWorks(cached, userId, now);
  }

  /**
   * Starts a dashboard session made from a key: returns the cookie's token, a random value of which
   * only the SHA-256 is stored. Expired sessions of every user are cleared on the way.
   */
  async startSession(auth: AuthenticatedKey, ttlMs: number): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const now = this.deps.clock.now();
    await this.deps.store.sessions.deleteExpired(now);
    await this.deps.store.sessions.insert({
      id: sessionId(token),
      user_id: auth.userId,
      key_id: auth.keyId,
      created_at: now,
      expires_at: new Date(now.getTime() + ttlMs),
    });
    return token;
  }

  /** The session a cookie's token names, while it is not signed out, expired, or its key revoked. */
  async session(token: string): Promise<AuthenticatedKey | null> {
    const row = await this.deps.store.sessions.active(sessionId(token), this.deps.clock.now());
    if (!row) return null;
    return (await this.isActive(row.key_id, row.user_id)) ? { userId: row.user_id, keyId: row.key_id } : null;
  }

  /** Signing out: the session is deleted, so a copy of its cookie no longer works anywhere. */
  async endSession(token: string): Promise<void> {
    await this.deps.store.sessions.delete(sessionId(token));
  }

  async list(userId: string): Promise<ApiKeyView[]> {
    const rows = await this.deps.store.keys.listForUser(userId);
    const now = this.deps.clock.now();
    return rows.map((row) => toView(row, now));
  }

  /** Revokes a key; revoking twice is harmless and answers the same. */
  async revoke(keyId: string, userId?: string): Promise<ApiKeyView> {
    const now = this.deps.clock.now();
    const row = await this.deps.store.keys.revoke(keyId, userId, now);
    if (!row) throw new AppError('NOT_FOUND', 'API key not found');
    this.cache.delete(keyId);
    return toView(row, now);
  }

  private async load(keyId: string, now: number): Promise<CachedKey | undefined> {
    // Reading the row is also when we note the key was used: at most once per KEY_CACHE_MS per process.
    const row = await this.deps.store.keys.touch(keyId, new Date(now));
    if (!row) {
      this.cache.delete(keyId);
      return undefined;
    }
    const entry: CachedKey = {
      userId: row.user_id,
      expiresAt: row.expires_at ? row.expires_at.getTime() : null,
      active: row.revoked_at === null,
      checkedAt: now,
    };
    this.cache.delete(keyId);
    this.cache.set(keyId, entry);
    if (this.cache.size > KEY_CACHE_MAX) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return entry;
  }
}

/** A key row, as last read, still works for this user at `now`. */
function keyWorks(cached: CachedKey, userId: string, now: number): boolean {
  if (!cached.active || cached.userId !== userId) return false;
  return cached.expiresAt === null || cached.expiresAt > now;
}

function toView(row: ApiKeyRow, now: Date): ApiKeyView {
  const status = row.revoked_at
    ? 'revoked'
    : row.expires_at && row.expires_at.getTime() <= now.getTime()
      ? 'expired'
      : 'active';
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at?.toISOString() ?? null,
    revokedAt: row.revoked_at?.toISOString() ?? null,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    status,
  };
}

function sessionId(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
