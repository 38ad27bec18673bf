import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import websocket from '@fastify/websocket';
import Fastify from 'fastify';
import { AppError } from '../domain/errors.js';
import { registerAdminAuth, registerApiAuth } from './auth.js';
import { registerDashboard } from './dashboard/index.js';
import { TALK_MAX_PAYLOAD } from './dashboard/talk.js';
import { clientErrorResponse, handleError } from './errors.js';
import { registerInputChecks } from './input.js';
import { declareCommonErrors, openApiOptions } from './openapi.js';
import { JsonRequestLog, LOG_SERIALIZERS, OneLineRequestLog } from './request-log.js';
import type { App, BuildAppOptions } from './route-kit.js';
import { registerDocs } from './routes/docs.js';
import { registerAdminRoutes, registerApiRoutes } from './routes/index.js';
import { registerMetrics } from './routes/metrics.js';
import { registerProbes } from './routes/probes.js';
import { registerOpenApi } from './routes/v1/openapi.get.js';
import { ErrorBody } from './schemas/common.js';
import { WEBHOOKS } from './schemas/webhooks.js';
import { makeAjv } from './validation.js';

// The composition (main.ts) names the app's type from here.
export type { App, AppServices, BuildAppOptions } from './route-kit.js';

/** Default body limit: single-call bodies are small; a batch route raises its own limit. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Builds the HTTP app without listening: tests inject requests, main.ts listens. */
export async function buildApp(options: BuildAppOptions): Promise<App> {
  const app = Fastify({
    loggerInstance: options.logger.child({}, { serializers: LOG_SERIALIZERS }),
    bodyLimit: DEFAULT_BODY_LIMIT,
    requestIdHeader: 'x-request-id',
    logController: options.conciseRequestLog ? new OneLineRequestLog() : new JsonRequestLog(),
    // A request arriving while the app closes is answered 503 by our own hook below, in the spec's
    // body (Fastify's own 503 carries `statusCode` and no code).
    return503OnClosing: false,
    // Errors the router finds before any handler (a bad percent-encoding, a path parameter over
    // 100 characters) and those Node's parser finds before Fastify (headers over 16 KB) get the
    // spec's error body like any other.
    frameworkErrors: (error, request, reply) => handleError(error, request, reply),
    clientErrorHandler: (error: NodeJS.ErrnoException, socket) => {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      if (socket.writable) socket.write(clientErrorResponse(error.code));
      socket.destroy(error);
    },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  // Bodies are checked strictly ("5" is not a number, unknown fields are refused); query strings
  // arrive as text, so their numbers are coerced.
  const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false });
  const queryAjv = makeAjv({ coerceTypes: true, removeAdditional: false });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : queryAjv).compile(schema as object),
  );

  // The API speaks JSON only: a text/plain body is refused with 415 instead of failing validation.
  app.removeContentTypeParser('text/plain');
  registerInputChecks(app);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(() => {
    throw new AppError('ROUTE_NOT_FOUND');
  });
  app.addSchema(ErrorBody);
  app.addHook('onRoute', declareCommonErrors);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    // An open event stream would hold the server open: each is ended now. (The OpenAPI document
    // is built from an app without services, which has none.)
    options.services.live?.closeStreams();
    // Web calls are hung up as the agent would (their session's stop) and their ends stored
    // before the sockets go: a stop never leaves a browser's call ONGOING.
    await options.services.webCalls?.close();
  });
  // The hooks every request passes take a callback: an async hook costs a promise and a
  // microtask turn per request (docs/benchmarks.md, issue 23).
  app.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? new AppError('SERVICE_UNAVAILABLE', 'The server is shutting down; try again') : undefined);
  });

  await app.register(swagger, openApiOptions(WEBHOOKS));

  registerProbes(app, options.services);

  await app.register(async (api) => {
    const scoped = api as unknown as App;
    registerApiAuth(scoped, options.services.keys);
    registerApiRoutes(scoped, options.services);
  });

  // Every answer is counted by route template (never the raw URL: ids would explode the series).
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    options.metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    options.metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
  registerMetrics(app, options);
  registerDocs(app);

  await app.register(async (dashboard) => {
    await dashboard.register(websocket, { options: { maxPayload: TALK_MAX_PAYLOAD } });
    registerDashboard(dashboard as unknown as App, options.services, {
      jwtSecret: options.jwtSecret,
      secureCookies: options.secureCookies,
    });
  });

  await app.register(async (admin) => {
    const scoped = admin as unknown as App;
    registerAdminAuth(scoped, options.adminToken);
    registerAdminRoutes(scoped, options.services);
  });

  registerOpenApi(app);
  return app;
}
