import type { App } from '../../route-kit.js';

/** The OpenAPI 3.1 document, generated from the route schemas. Public: it holds no data. */
export function registerOpenApi(app: App): void {
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
