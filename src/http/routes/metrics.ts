import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../domain/errors.js';
import { bearerToken } from '../auth.js';
import type { App, BuildAppOptions } from '../route-kit.js';

/**
 * `GET /metrics`: Prometheus text format. Readable with the admin token as a bearer token, or
 * without it from an address listed in OUTDIAL_METRICS_ALLOW (a scraper on a private network).
 */
export function registerMetrics(
  app: App,
  options: Pick<BuildAppOptions, 'metrics' | 'metricsAllow' | 'sampleGauges' | 'adminToken'>,
): void {
  const expected = createHash('sha256').update(options.adminToken).digest();
  const allowed = new Set(options.metricsAllow);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const token = bearerToken(request.headers.authorization);
    const given = createHash('sha256')
      .update(token ?? '')
      .digest();
    const byToken = token !== undefined && timingSafeEqual(given, expected);
    const address = request.ip.replace(/^::ffff:/, '');
    if (!byToken && !allowed.has(address)) {
      throw new AppError('ADMIN_UNAUTHORIZED');
    }
    await options.sampleGauges();
    return reply
      .type(options.metrics.registry.contentType)
      .header('cache-control', 'no-store')
      .send(await options.metrics.registry.metrics());
  });
}
