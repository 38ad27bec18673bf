import { STATUS_CODES } from 'node:http';
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
  PAYLOAD_TOO_LARGE: {
    status: 413,
    error: 'Payload Too Large',
    withCode: true,
    message: 'The request body is larger than this endpoint accepts',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    error: 'Unsupported Media Type',
    withCode: true,
    message: 'Send the body as application/json',
  },
  // A query string or path parameter that fails its schema or the text rules (the spec's "Bad Request").
  INVALID_PARAMETER: { status: 400, error: 'Bad Request', withCode: false, message: 'Invalid parameter' },
  URI_TOO_LONG: {
    status: 414,
    error: 'URI Too Long',
    withCode: true,
    message: 'A path parameter is longer than 100 characters',
    fixed: true,
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    error: 'Request Header Fields Too Large',
    withCode: true,
    message: 'The request line and headers are larger than 16 KB',
    fixed: true,
  },
  REQUEST_TIMEOUT: {
    status: 408,
    error: 'Request Timeout',
    withCode: true,
    message: 'The request was not received in time',
    fixed: true,
  },
  // Whatever else the HTTP layer refuses before a route runs (a malformed request line or header,
  // a body shorter than its Content-Length).
  BAD_HTTP_REQUEST: { status: 400, error: 'Bad Request', withCode: true, message: 'Malformed HTTP request' },
  UNAUTHORIZED: {
    status: 401,
    error: 'Unauthorized',
    withCode: false,
    message: 'Invalid or missing API key',
    fixed: true,
  },
  // The admin interface's token is not an API key: its refusal says which credential was wrong.
  ADMIN_UNAUTHORIZED: {
    status: 401,
    error: 'Unauthorized',
    withCode: false,
    message: 'Invalid or missing admin token',
    fixed: true,
  },
  FORBIDDEN: { status: 403, error: 'Forbidden', withCode: false, message: 'Access denied', fixed: true },
  // The spec's 403 body with a code: the number is on the user's suppression list (issue 15).
  NUMBER_SUPPRESSED: { status: 403, error: 'Forbidden', withCode: true },
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
  BATCH_NOT_PAUSABLE: { status: 400, error: 'Bad Request', withCode: true },
  BATCH_NOT_PAUSED: { status: 400, error: 'Bad Request', withCode: true },
  CALL_IN_PROGRESS: { status: 409, error: 'Conflict', withCode: true },
  CALL_NOT_ENDED: { status: 409, error: 'Conflict', withCode: true },
  // Live call control: no process holds an AI session for the call (ended, not answered yet, canned).
  CALL_NOT_LIVE: { status: 409, error: 'Conflict', withCode: true },
  // The process holding the call did not answer the command in time.
  LIVE_CALL_TIMEOUT: { status: 504, error: 'Gateway Timeout', withCode: true },
  CONFLICT: { status: 409, error: 'Conflict', withCode: true },
  // A request under the same Idempotency-Key is still running; retrying later gets its response.
  IDEMPOTENCY_KEY_IN_USE: { status: 409, error: 'Conflict', withCode: true },
  // The same Idempotency-Key with another body: a client bug, never a retry (the IETF draft's 422).
  IDEMPOTENCY_KEY_REUSED: { status: 422, error: 'Unprocessable Entity', withCode: true },
  PROVIDER_ERROR: { status: 502, error: 'Bad Gateway', withCode: true },
  SERVICE_UNAVAILABLE: { status: 503, error: 'Service Unavailable', withCode: true },
  // A dependency the call needs (a model endpoint, a SIP trunk) has an open circuit breaker.
  DEPENDENCY_UNAVAILABLE: { status: 503, error: 'Service Unavailable', withCode: true },
  // The process that would hold an AI call is at its bound or lagging (issue 24 §7): retry shortly.
  OVERLOADED: { status: 503, error: 'Service Unavailable', withCode: true },
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

/**
 * `contacts/12/phoneNumber` style paths become `contacts.12.phoneNumber`; a missing property is named.
 * Collected in a Map: a field may be called `toString` or `__proto__`, which a plain object would
 * answer from its prototype (that answered 500 "list.includes is not a function").
 */
export function fieldErrorsOf(issues: AjvIssue[]): Record<string, string[]> {
  const out = new Map<string, string[]>();
  const allowed = allowedValuesByPath(issues);
  for (const issue of issues) {
    let field = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
    let message = issue.message ?? 'is invalid';
    const values = allowed.get(issue.instancePath);
    if (values && (issue.keyword === 'enum' || issue.keyword === 'const' || issue.keyword === 'anyOf')) {
      // A value outside an enum, a literal or a union of literals: the allowed values, named.
      message = `must be one of: ${values.join(', ')}`;
    } else if (issue.keyword === 'required' && typeof issue.params.missingProperty === 'string') {
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
    const list = out.get(key) ?? [];
    if (!list.includes(message)) list.push(message);
    out.set(key, list);
  }
  return Object.fromEntries(out);
}

/**
 * The values allowed at each path that an `enum`, a `const` or a union of `const`s (TypeBox's
 * Literal and Union of Literals) refused, in the schema's order.
 */
function allowedValuesByPath(issues: AjvIssue[]): Map<string, string[]> {
  const allowed = new Map<string, string[]>();
  const add = (path: string, value: unknown) => {
    const list = allowed.get(path) ?? [];
    const shown = typeof value === 'string' ? value : JSON.stringify(value);
    if (!list.includes(shown)) list.push(shown);
    allowed.set(path, list);
  };
  for (const issue of issues) {
    if (issue.keyword === 'enum' && Array.isArray(issue.params.allowedValues)) {
      for (const value of issue.params.allowedValues) add(issue.instancePath, value);
    } else if (issue.keyword === 'const') {
      add(issue.instancePath, issue.params.allowedValue);
    }
  }
  return allowed;
}

/** Everything thrown in a handler lands here; nothing but AppError and Fastify's own errors reaches a client as itself. */
export function handleError(
  error: FastifyError | AppError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const known = error instanceof AppError ? error : appErrorOf(error as FastifyError);
  if (known) {
    const { status, body } = errorBody(known);
    // A refusal that says when to come back (details.retryAfterSeconds) says it in Retry-After too.
    const retryAfter = known.details?.retryAfterSeconds;
    if (typeof retryAfter === 'number') reply.header('retry-after', String(retryAfter));
    reply.status(status).send(body);
    return;
  }
  request.log.error({ err: error }, 'unhandled error');
  const { status, body } = errorBody(new AppError('INTERNAL'));
  reply.status(status).send(body);
}

/** Fastify's and Ajv's errors in the terms of the code table; null for anything unexpected (a 500). */
function appErrorOf(error: FastifyError): AppError | null {
  if (error.validation) {
    const fieldErrors = fieldErrorsOf(error.validation as AjvIssue[]);
    if (error.validationContext === 'body') {
      return new AppError('INVALID_REQUEST', summarize(fieldErrors), { fieldErrors });
    }
    const missing = error.validation.some((issue) => issue.keyword === 'required');
    // A header (Idempotency-Key) is named in the message: the client cannot guess which one.
    // A missing one keeps the contract's fixed message; a bad one is named, so the client need not
    // open details.fieldErrors to learn which.
    const message =
      error.validationContext === 'headers'
        ? `Header ${summarize(fieldErrors)}`
        : missing
          ? undefined
          : invalidParameter(fieldErrors);
    return new AppError(missing ? 'MISSING_PARAMETER' : 'INVALID_PARAMETER', message, { fieldErrors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_BAD_URL':
      return new AppError('INVALID_PARAMETER', 'The URL is not valid percent-encoded UTF-8');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError('URI_TOO_LONG');
    default:
      break;
  }
  // Any other refusal of the framework's keeps its meaning under one of our codes (so a status the
  // document does not declare never leaks out); its message is the framework's description.
  switch (error.statusCode) {
    case 413:
      return new AppError('PAYLOAD_TOO_LARGE', error.message);
    case 415:
      return new AppError('UNSUPPORTED_MEDIA_TYPE', error.message);
    case 404:
      return new AppError('ROUTE_NOT_FOUND', error.message);
    default:
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500)
        return new AppError('BAD_HTTP_REQUEST', error.message);
      return null;
  }
}

/**
 * The raw answer to a request Node's HTTP parser refused before Fastify saw it (headers over 16 KB,
 * a malformed request line, a timeout), in the spec's error body like every other error.
 */
export function clientErrorResponse(code: string | undefined): string {
  const appCode: ErrorCode =
    code === 'HPE_HEADER_OVERFLOW'
      ? 'HEADERS_TOO_LARGE'
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'REQUEST_TIMEOUT'
        : code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
          ? 'PAYLOAD_TOO_LARGE'
          : 'BAD_HTTP_REQUEST';
  const { status, body } = errorBody(new AppError(appCode));
  const text = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`
  );
}

/** "Invalid parameter: limit must be <= 100": the fixed words, then the first bad field. */
export function invalidParameter(fieldErrors: Record<string, string[]>): string {
  return Object.keys(fieldErrors).length === 0
    ? 'Invalid parameter'
    : `Invalid parameter: ${summarize(fieldErrors)}`;
}

function summarize(fieldErrors: Record<string, string[]>): string {
  const entries = Object.entries(fieldErrors);
  const [first] = entries;
  if (!first) return 'The request body is invalid';
  const more = entries.length > 1 ? ` (and ${entries.length - 1} more)` : '';
  return `${first[0]} ${first[1][0] ?? 'is invalid'}${more}`;
}
