import fs from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { RouteOptions } from 'fastify';
import { AppError, fieldError } from '../../domain/errors.js';
import { findInputProblem } from '../../domain/input.js';
import type { App } from '../route-kit.js';
import { registerLiveCallRoutes } from './live-call.js';
import { type DashboardServices, pageGuard } from './page-kit.js';
import { registerApiKeysPage } from './pages/api-keys.js';
import { registerBatchPage } from './pages/batch.js';
import { registerCallPage } from './pages/call.js';
import { registerCallsPage } from './pages/calls.js';
import { registerCampaignsPage } from './pages/campaigns.js';
import { registerSettingsPage } from './pages/settings.js';
import { registerSignInPage } from './pages/sign-in.js';
import { registerSuppressionsPage } from './pages/suppressions.js';
import { registerWebhooksPage } from './pages/webhooks.js';
import { Sessions } from './session.js';
import { registerTalkRoutes } from './talk.js';

const require = createRequire(import.meta.url);
/** Static files: our own, and uPlot's from its npm package. No CDN, nothing from outside. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'app.js': { file: fileURLToPath(new URL('./assets/app.js', import.meta.url)), type: 'text/javascript' },
  'live-call.js': {
    file: fileURLToPath(new URL('./assets/live-call.js', import.meta.url)),
    type: 'text/javascript',
  },
  'talk.js': { file: fileURLToPath(new URL('./assets/talk.js', import.meta.url)), type: 'text/javascript' },
  'talk-worklet.js': {
    file: fileURLToPath(new URL('./assets/talk-worklet.js', import.meta.url)),
    type: 'text/javascript',
  },
  'app.css': { file: fileURLToPath(new URL('./assets/app.css', import.meta.url)), type: 'text/css' },
  'uPlot.iife.min.js': { file: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript' },
  'favicon.svg': {
    file: fileURLToPath(new URL('./assets/favicon.svg', import.meta.url)),
    type: 'image/svg+xml',
  },
  'uPlot.min.css': { file: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css' },
};

/**
 * The monitoring pages: sign-in with an API key, the campaigns list, a live campaign page, a call
 * page, the API keys page, and the settings, suppressions and webhooks pages. Server-rendered HTML, a small script of our own for the live parts.
 */
export function registerDashboard(
  app: App,
  services: DashboardServices,
  options: { jwtSecret: string; secureCookies: boolean },
): void {
  const sessions = new Sessions(services.keys, options.jwtSecret, options.secureCookies);

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 16 * 1024 },
    (_request, body, done) => {
      const form = Object.fromEntries(new URLSearchParams(body as string));
      const problem = findInputProblem(form);
      if (problem) done(fieldError(problem.field, problem.message), undefined);
      else done(null, form);
    },
  );
  app.addHook('onRoute', hideFromDocument);
  const guard = pageGuard(sessions);

  registerLiveCallRoutes(app, services.live, guard);
  registerTalkRoutes(app, services, guard);

  app.get('/dashboard/assets/:file', async (request, reply) => {
    const file = (request.params as { file: string }).file;
    // Own keys only: `toString` or `__proto__` would otherwise be found on the object's prototype.
    const asset = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (!asset) throw new AppError('ROUTE_NOT_FOUND');
    return reply
      .header('content-type', `${asset.type}; charset=utf-8`)
      .header('cache-control', 'public, max-age=3600')
      .header('x-content-type-options', 'nosniff')
      .send(fs.createReadStream(asset.file));
  });

  registerSignInPage(app, guard);
  registerCampaignsPage(app, services, guard);
  registerBatchPage(app, services, guard);
  registerCallsPage(app, services, guard);
  registerCallPage(app, services, guard);
  registerApiKeysPage(app, services, guard);
  registerSettingsPage(app, services, guard);
  registerSuppressionsPage(app, services, guard);
  registerWebhooksPage(app, services, guard);
}

/**
 * The dashboard's pages are for browsers, not part of the API: kept out of the OpenAPI document
 * (docs/decisions.md), which lists only what API clients call.
 */
function hideFromDocument(route: RouteOptions): void {
  route.schema = { ...route.schema, hide: true } as RouteOptions['schema'];
}
