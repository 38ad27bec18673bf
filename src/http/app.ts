import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import websocket from '@fastify/websocket';
import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import Fastify, { type FastifyReply, type FastifyRequest, LogController, type RouteOptions } from 'fastify';
import { AppError } from '../domain/errors.js';
import { representableInstant } from '../domain/input.js';
import { registerAdminAuth, registerApiAuth } from './auth.js';
import { registerDashboard } from './dashboard/index.js';
import { TALK_MAX_PAYLOAD } from './dashboard/talk.js';
import { clientErrorResponse, handleError } from './errors.js';
import { registerInputChecks } from './input.js';
import { openApiOptions } from './openapi.js';
import type { App, BuildAppOptions } from './route-kit.js';
import { registerAdminAgents } from './routes/admin/agents.js';
import { registerAdminKeys } from './routes/admin/keys.js';
import { registerAdminSipTrunks } from './routes/admin/sip-trunks.js';
import { registerAdminUsers } from './routes/admin/users.js';
import { registerDocs } from './routes/docs.js';
import { registerMetrics } from './routes/metrics.js';
import { registerProbes } from './routes/probes.js';
import { registerAccountGet } from './routes/v1/account.get.js';
import { registerAgentGet } from './routes/v1/agent.get.js';
import { registerBatchCancel } from './routes/v1/batch.cancel.js';
import { registerBatchCheckStatus } from './routes/v1/batch.check-status.get.js';
import { registerBatchCreate } from './routes/v1/batch.create.js';
import { registerBatchExport } from './routes/v1/batch.export.get.js';
import { registerBatchList } from './routes/v1/batch.list.get.js';
import { registerBatchPause } from './routes/v1/batch.pause.js';
import { registerBatchPreflight } from './routes/v1/batch.preflight.js';
import { registerCallAnalysis } from './routes/v1/call.analysis.js';
import { registerCallCheckStatus } from './routes/v1/call.check-status.get.js';
import { registerCallDial } from './routes/v1/call.dial.js';
import { registerCallEvents } from './routes/v1/call.events.get.js';
import { registerCallHangup } from './routes/v1/call.hangup.js';
import { registerCallList } from './routes/v1/call.list.get.js';
import { registerCallRecording } from './routes/v1/call.recording.get.js';
import { registerCallSay } from './routes/v1/call.say.js';
import { registerCallTransfer } from './routes/v1/call.transfer.js';
import { registerHealthGet } from './routes/v1/health.get.js';
import { registerOpenApi } from './routes/v1/openapi.get.js';
import { registerStatusBatch } from './routes/v1/status.batch.get.js';
import { registerStatusCall } from './routes/v1/status.call.get.js';
import { registerSuppressionCreate } from './routes/v1/suppressions.create.js';
import { registerSuppressionDelete } from './routes/v1/suppressions.delete.js';
import { registerSuppressionList } from './routes/v1/suppressions.list.get.js';
import { registerWebhookDeliveries } from './routes/v1/webhooks.deliveries.js';
import { ErrorBody, errorResponses } from './schemas/common.js';
import { WEBHOOKS } from './schemas/webhooks.js';

// The composition (main.ts) names the app's type from here.
export type { App, AppServices, BuildAppOptions } from './route-kit.js';

/** Default body limit: single-call bodies are small; a batch route raises its own limit. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

function makeAjv(options: AjvOptions): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, ...options });
  addFormats.default(ajv);
  // RFC 3339 allows a leap second (23:59:60) that no Date can hold, and any year: a date-time is
  // accepted only if it is a real instant the database stores and gives back (1970 to 9999).
  const rfc3339 = fullFormats['date-time'];
  const wellFormed = (text: string): boolean =>
    typeof rfc3339 === 'object' &&
    'validate' in rfc3339 &&
    typeof rfc3339.validate === 'function' &&
    (rfc3339.validate as (value: string) => boolean)(text);
  ajv.addFormat('date-time', (text: string) => wellFormed(text) && representableInstant(new Date(text)));
  ajv.addSchema(ErrorBody);
  return ajv;
}

/** A URL as the request log may show it: every `token` query value (signed recording links) hidden. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}

/**
 * What the request log keeps of a request: never a header (Authorization, Cookie) and never a
 * token in the query string, since a signed recording URL is itself a credential.
 */
const LOG_SERIALIZERS = {
  req: (req: { method: string; url: string; host?: string; ip?: string }) => ({
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
  }),
};

/** Fastify's request logging, as one line when the request is answered: `GET /livez 200 1.2 ms`. */
class OneLineRequestLog extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = `${request.method} ${redactUrl(request.url)} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)} ms`;
    if (error) reply.log.error({ err: error }, line);
    else reply.log.info(line);
  }
}

/** Builds the HTTP app without listening: tests inject requests, main.ts listens. */
export async function buildApp(options: BuildAppOptions): Promise<App> {
  const app = Fastify({
    loggerInstance: options.logger.child({}, { serializers: LOG_SERIALIZERS }),
    bodyLimit: DEFAULT_BODY_LIMIT,
    requestIdHeader: 'x-request-id',
    ...(options.conciseRequestLog ? { logController: new OneLineRequestLog() } : {}),
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
  app.addHook('onRequest', async () => {
    if (closing) throw new AppError('SERVICE_UNAVAILABLE', 'The server is shutting down; try again');
  });

  await app.register(swagger, openApiOptions(WEBHOOKS));

  registerProbes(app, options.services);

  await app.register(async (api) => {
    const scoped = api as unknown as App;
    registerApiAuth(scoped, options.services.keys);
    registerAgentGet(scoped, options.services);
    registerCallDial(scoped, options.services);
    registerStatusCall(scoped, options.services);
    registerCallCheckStatus(scoped, options.services);
    registerCallList(scoped, options.services);
    registerHealthGet(scoped, options.services);
    registerCallRecording(scoped, options.services);
    registerBatchCheckStatus(scoped, options.services);
    registerStatusBatch(scoped, options.services);
    registerBatchList(scoped, options.services);
    registerBatchCancel(scoped, options.services);
    registerBatchPause(scoped, options.services);
    registerBatchExport(scoped, options.services);
    registerWebhookDeliveries(scoped, options.services);
    registerCallAnalysis(scoped, options.services);
    registerBatchCreate(scoped, options.services);
    registerAccountGet(scoped, options.services);
    registerSuppressionCreate(scoped, options.services);
    registerSuppressionList(scoped, options.services);
    registerSuppressionDelete(scoped, options.services);
    registerBatchPreflight(scoped, options.services);
    registerCallHangup(scoped, options.services);
    registerCallTransfer(scoped, options.services);
    registerCallSay(scoped, options.services);
    registerCallEvents(scoped, options.services);
  });

  // Every answer is counted by route template (never the raw URL: ids would explode the series).
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    options.metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    options.metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
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
    registerAdminUsers(scoped, options.services);
    registerAdminAgents(scoped, options.services);
    registerAdminKeys(scoped, options.services);
    registerAdminSipTrunks(scoped, options.services);
  });

  registerOpenApi(app);
  return app;
}

/**
 * Every operation declares every status it can answer. Those that come from the framework rather
 * than the route (a malformed URL or header, a body too large or not JSON, a path parameter too
 * long, a route being shut down) are added here to whatever the route declares itself.
 */
function declareCommonErrors(route: RouteOptions): void {
  const schema = route.schema ?? {};
  const meta = schema as { hide?: boolean; security?: readonly unknown[] };
  if (meta.hide) return;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const statuses = [400, 408, 431, 500, 503];
  if (!Array.isArray(meta.security) || meta.security.length > 0) statuses.push(401);
  if (methods.some((method) => method !== 'GET' && method !== 'HEAD')) statuses.push(413, 415);
  if (route.url.includes(':')) statuses.push(404, 414);
  const declared = (schema.response ?? {}) as Record<string, unknown>;
  const missing = statuses.filter((status) => !(String(status) in declared));
  route.schema = { ...schema, response: { ...declared, ...errorResponses(...missing) } };
}
