/**
 * Every failure the service reports carries a machine code; `http/errors.ts` maps each code to a
 * status and the spec's error body in one table.
 */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'MISSING_PARAMETER'
  | 'INVALID_JSON'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INVALID_PARAMETER'
  | 'URI_TOO_LONG'
  | 'HEADERS_TOO_LARGE'
  | 'REQUEST_TIMEOUT'
  | 'BAD_HTTP_REQUEST'
  | 'UNAUTHORIZED'
  | 'ADMIN_UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NUMBER_SUPPRESSED'
  | 'NOT_FOUND'
  | 'ROUTE_NOT_FOUND'
  | 'AGENT_NOT_FOUND'
  | 'INSUFFICIENT_CREDITS'
  | 'CONCURRENCY_LIMIT'
  | 'CALL_IN_PROGRESS'
  | 'CALL_NOT_ENDED'
  | 'CALL_NOT_LIVE'
  | 'LIVE_CALL_TIMEOUT'
  | 'SCHEDULE_IN_PAST'
  | 'BATCH_NOT_CANCELLABLE'
  | 'BATCH_NOT_PAUSABLE'
  | 'BATCH_NOT_PAUSED'
  | 'CONFLICT'
  | 'IDEMPOTENCY_KEY_IN_USE'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'PROVIDER_ERROR'
  | 'SERVICE_UNAVAILABLE'
  | 'DEPENDENCY_UNAVAILABLE'
  | 'OVERLOADED'
  | 'INTERNAL';

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message ?? code);
  }
}

export function fieldError(field: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', `${field}: ${message}`, { fieldErrors: { [field]: [message] } });
}
