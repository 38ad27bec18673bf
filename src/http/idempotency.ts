import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
import {
  IDEMPOTENCY_KEY_PATTERN,
  type IdempotencyClaim,
  type IdempotencyService,
  requestHash,
} from '../services/idempotency.js';
import { errorBody } from './errors.js';

/** The request headers of an endpoint that takes an Idempotency-Key (for validation and the OpenAPI document). */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      pattern: IDEMPOTENCY_KEY_PATTERN,
      description:
        'Idempotency-Key: 1 to 255 printable ASCII characters, per user. The same key and body within 24 h answer the first response again (with `Idempotent-Replayed: true`); another body is 422 IDEMPOTENCY_KEY_REUSED; while the first request runs, 409 IDEMPOTENCY_KEY_IN_USE.',
    }),
  ),
});

/** The header a replayed response carries. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** The success response's headers of an endpoint that takes an Idempotency-Key (for the OpenAPI document). */
export const ReplayedResponseHeaders = {
  [REPLAYED_HEADER]: Type.Literal('true', {
    description:
      'Present (`true`) when this is the stored answer to an earlier request under the same Idempotency-Key',
  }),
};

/**
 * The transaction a creating service runs in, as the idempotency claim takes it. Named from the
 * service rather than the storage adapter, so the HTTP layer never depends on which database (or
 * which port) the services use; when their transaction type changes, this follows it.
 */
type Tx = Parameters<IdempotencyClaim['complete']>[0];

/** Records the response in the transaction that creates the resource. */
export type OnCommit<T> = (trx: Tx, result: T) => Promise<void>;

/**
 * Runs a creating request under its Idempotency-Key, if it has one: a replay is answered from the
 * stored response; otherwise `run` gets the hook that records the response in its own
 * transaction. Without the header it is just `run`. Sends the reply.
 */
export async function withIdempotencyKey<T>(options: {
  request: FastifyRequest;
  reply: FastifyReply;
  service: IdempotencyService;
  userId: string;
  /** The success status of the endpoint. */
  status: number;
  resourceId: (result: T) => string;
  run: (onCommit?: OnCommit<T>) => Promise<T>;
}): Promise<FastifyReply> {
  const { request, reply, service, userId, status } = options;
  const header = request.headers['idempotency-key'];
  const key = Array.isArray(header) ? header.join(', ') : header;
  if (key === undefined) {
    return reply.status(status).send(await options.run());
  }
  const body = request.rawBody ?? JSON.stringify(request.body ?? null);
  const hash = requestHash(request.method, request.routeOptions.url ?? request.url, body);
  const start = await service.begin(userId, key, hash);
  if (start.kind === 'replay') {
    return reply.header(REPLAYED_HEADER, 'true').status(start.response.status).send(start.response.body);
  }
  const { claim } = start;
  try {
    const result = await options.run((trx, value) =>
      claim.complete(trx, { status, body: value, resourceId: options.resourceId(value) }),
    );
    return reply.status(status).send(result);
  } catch (error) {
    const answer = errorBody(error instanceof AppError ? error : new AppError('INTERNAL'));
    await claim.failed(answer).catch((failure: unknown) => {
      request.log.error({ err: failure }, 'could not settle an idempotency key after a failure');
    });
    throw error;
  }
}
