import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode } from '../domain/errors.js';

/** The spec's error body. */
export interface ErrorBody {
  error: string;
  code?: string;
  message?: string;
  details?: Record<string, unknown>;
}

interface ErrorRule {
  status: number;
  error: string;
  /** Whether the body carries `code` (the spec shows none for 401, 403, 404 Not Found and 500). */
  withCode: boolean;
  /** The message when the error carries none of its own, or always when `fixed`. */
  message?: string;
  fixed?: boolean;
}

/** One table from machine code to HTTP status and body. */
const RULES: Record<ErrorCode, ErrorRule> = {
  INVALID_REQUEST: { status: 400, error: 'Validation failed', withCode: true },
  MISSING_PARAMETER: {
    status: 400,
    error: 'Bad Request',
    withCode: false,
    message: 'Missing required parameter',
  },
  INVALID_JSON: { status: 400, error: 'Bad Request', withCode: true },
  PAYLOAD_TOO_LARGE: { status: 413, error: 'Payload Too Large', withCode: true },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, error: 'Unsupported Media Type', withCode: true },
  UNAUTHORIZED: {
    status: 401,
    error: 'Unauthorized',
    withCode: false,
    message: 'Invalid or missing API key',
    fixed: true,
  },
  FORBIDDEN: { status: 403, error: 'Forbidden', withCode: false, message: 'Access denied', fixed: true },
  NOT_FOUND: { status: 404, error: 'Not Found', withCode: false, message: 'Resource not found', fixed: true },
  ROUTE_NOT_FOUND: { status: 404, error: 'Not Found', withCode: false, message: 'Route not found' },
  AGENT_NOT_FOUND: { status: 404, error: 'Agent not found or inactive', withCode: true },
  INSUFFICIENT_CREDITS: { status: 402, error: 'Insufficient call minutes', withCode: true },
  CONCURRENCY_LIMIT: { status: 429, error: 'Too Many Requests', withCode: true },
  SCHEDULE_IN_PAST: {
    status: 400,
    error: 'Scheduled start time must be in the future',
    withCode: false,
    fixed: true,
  },
  BATCH_NOT_CANCELLABLE: { status: 400, error: 'Bad Request', withCode: true },
  CALL_IN_PROGRESS: { status: 409, error: 'Conflict', withCode: true },
  CALL_NOT_ENDED: { status: 409, error: 'Conflict', withCode: true },
  CONFLICT: { status: 409, error: 'Conflict', withCode: true },
  PROVIDER_ERROR: { status: 502, error: 'Bad Gateway', withCode: true },
  SERVICE_UNAVAILABLE: { status: 503, error: 'Service Unavailable', withCode: true },
  INTERNAL: {
    status: 500,
    error: 'Internal Server Error',
    withCode: false,
    message: 'An unexpected error occurred',
    fixed: true,
  },
};

export function statusOf(code: ErrorCode): number {
  return RULES[code].status;
}

export function errorBody(error: AppError): { status: number; body: ErrorBody | Record<string, unknown> } {
  const rule = RULES[error.code];
  if (error.code === 'CALL_IN_PROGRESS') {
    // The spec: "returns a reply with message and the earlier callId rather than the standard error body".
    return { status: rule.status, body: { message: error.message, callId: error.details?.callId ?? null } };
  }
  const body: ErrorBody = { error: rule.error };
  if (rule.withCode) body.code = error.code;
  const ownMessage = error.message !== error.code ? error.message : undefined;
  const message = rule.fixed ? rule.message : (ownMessage ?? rule.message);
  if (message) body.message = message;
  if (error.details && !rule.fixed) body.details = error.details;
  return { status: rule.status, body };
}

interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** `contacts/12/phoneNumber` style paths become `contacts.12.phoneNumber`; a missing property is named. */
export function fieldErrorsOf(issues: AjvIssue[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const issue of issues) {
    let field = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
    let message = issue.message ?? 'is invalid';
    if (issue.keyword === 'required' && typeof issue.params.missingProperty === 'string') {
      field = field ? `${field}.${issue.params.missingProperty}` : issue.params.missingProperty;
      message = 'is required';
    } else if (
      issue.keyword === 'additionalProperties' &&
      typeof issue.params.additionalProperty === 'string'
    ) {
      field = field ? `${field}.${issue.params.additionalProperty}` : issue.params.additionalProperty;
      message = 'is not a recognised field';
    } else if (issue.keyword === 'errorMessage') {
      message = issue.message ?? message;
    }
    const key = field || '(body)';
    const list = out[key] ?? [];
    if (!list.includes(message)) list.push(message);
    out[key] = list;
  }
  return out;
}

/** Everything thrown in a handler lands here; nothing but AppError and Fastify's own errors reaches a client as itself. */
export function handleError(
  error: FastifyError | AppError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  if (error instanceof AppError) {
    const { status, body } = errorBody(error);
    reply.status(status).send(body);
    return;
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const fieldErrors = fieldErrorsOf(fastifyError.validation as AjvIssue[]);
    if (fastifyError.validationContext === 'body') {
      reply.status(400).send({
        error: 'Validation failed',
        code: 'INVALID_REQUEST',
        message: summarize(fieldErrors),
        details: { fieldErrors },
      });
      return;
    }
    const missing = fastifyError.validation.some((issue) => issue.keyword === 'required');
    reply.status(400).send({
      error: 'Bad Request',
      message: missing ? 'Missing required parameter' : 'Invalid parameter',
      details: { fieldErrors },
    });
    return;
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      reply.status(413).send({
        error: 'Payload Too Large',
        code: 'PAYLOAD_TOO_LARGE',
        message: 'The request body is larger than this endpoint accepts',
      });
      return;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      reply.status(415).send({
        error: 'Unsupported Media Type',
        code: 'UNSUPPORTED_MEDIA_TYPE',
        message: 'Send the body as application/json',
      });
      return;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      reply.status(400).send({
        error: 'Bad Request',
        code: 'INVALID_JSON',
        message: 'The body is empty; send a JSON object',
      });
      return;
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      reply
        .status(400)
        .send({ error: 'Bad Request', code: 'INVALID_JSON', message: 'The body is not valid JSON' });
      return;
    default:
      break;
  }
  if (error instanceof SyntaxError || fastifyError.statusCode === 400) {
    reply
      .status(400)
      .send({ error: 'Bad Request', code: 'INVALID_JSON', message: 'The body is not valid JSON' });
    return;
  }
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    reply.status(fastifyError.statusCode).send({ error: 'Bad Request', message: fastifyError.message });
    return;
  }
  request.log.error({ err: error }, 'unhandled error');
  reply.status(500).send({ error: 'Internal Server Error', message: 'An unexpected error occurred' });
}

function summarize(fieldErrors: Record<string, string[]>): string {
  const entries = Object.entries(fieldErrors);
  const [first] = entries;
  if (!first) return 'The request body is invalid';
  const more = entries.length > 1 ? ` (and ${entries.length - 1} more)` : '';
  return `${first[0]} ${first[1][0] ?? 'is invalid'}${more}`;
}
