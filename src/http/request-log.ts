import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/** A URL as the request log may show it: every `token` query value (signed recording links) hidden. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}

/**
 * What the request log keeps of a request: never a header (Authorization, Cookie) and never a
 * token in the query string, since a signed recording URL is itself a credential.
 */
export const LOG_SERIALIZERS = {
  req: (req: { method: string; url: string; host?: string; ip?: string }) => ({
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
  }),
};

/** Fastify's request logging, as one line when the request is answered: `GET /livez 200 1.2 ms`. */
export class OneLineRequestLog extends LogController {
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

/**
 * Fastify's request logging in the JSON format: one `info` record a request, "request completed",
 * written when it is answered and carrying the request (`req`: method, URL, host, client address),
 * the reply's status (`res`) and `responseTime` in ms; "request errored" at `error` when it failed.
 * The "incoming request" record is kept at `debug`, for finding a request that never completes.
 */
export class JsonRequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }
  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error) {
      reply.log.error(
        { req: request, res: reply, err: error, responseTime: reply.elapsedTime },
        'request errored',
      );
    } else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
