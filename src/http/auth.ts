import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../domain/errors.js';
import type { AuthenticatedKey, KeyService } from '../services/keys.js';
import type { App } from './route-kit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key's user; null only on routes whose config says `auth: 'optional'`. */
    auth: AuthenticatedKey | null;
  }
  interface FastifyContextConfig {
    auth?: 'optional';
  }
}

/** A bearer token, or undefined when the header is absent or not of the bearer form. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * Every /api/v1 route needs a working API key. The check runs in onRequest, before the body is
 * read, so an anonymous client cannot make us parse 16 MB.
 */
export function registerApiAuth(app: App, keys: KeyService): void {
  app.decorateRequest('auth', null);
  // A callback hook: a key this process has checked within KEY_CACHE_MS is answered without a
  // promise, which every API request would otherwise pay (docs/benchmarks.md, issue 23).
  app.addHook('onRequest', (request, _reply, done) => {
    const settle = (auth: AuthenticatedKey | null) => {
      if (!auth && request.routeOptions.config.auth !== 'optional') {
        done(new AppError('UNAUTHORIZED'));
        return;
      }
      request.auth = auth;
      done();
    };
    const token = bearerToken(request.headers.authorization);
    if (!token) return settle(null);
    const known = keys.cachedAuthentication(token);
    if (known !== undefined) return settle(known);
    keys.authenticate(token).then(settle, done);
  });
}

export function requireAuth(request: { auth: AuthenticatedKey | null }): AuthenticatedKey {
  if (!request.auth) throw new AppError('UNAUTHORIZED');
  return request.auth;
}

/** The admin interface: one bearer token, compared in constant time. */
export function registerAdminAuth(app: App, adminToken: string): void {
  const expected = createHash('sha256').update(adminToken).digest();
  app.addHook('onRequest', async (request) => {
    const token = bearerToken(request.headers.authorization);
    const given = createHash('sha256')
      .update(token ?? '')
      .digest();
    if (!token || !timingSafeEqual(given, expected)) {
      throw new AppError('ADMIN_UNAUTHORIZED');
    }
  });
}
