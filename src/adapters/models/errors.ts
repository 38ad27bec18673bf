import { AppError } from '../../domain/errors.js';

/** Which model port failed. */
export type ModelPort = 'chat' | 'stt' | 'tts';

/**
 * Why: the server answered an error status ('status'), could not be reached or dropped the
 * connection ('network'), did not answer in time ('timeout'), or answered something that is not
 * the protocol ('malformed').
 */
export type ModelFailure = 'status' | 'network' | 'timeout' | 'malformed';

/**
 * A model server failed. The engine apologises and hangs up on it; the message names the port,
 * the server's URL and what happened, never the API key.
 */
export class ModelError extends AppError {
  override name = 'ModelError';
  constructor(
    readonly port: ModelPort,
    readonly reason: ModelFailure,
    message: string,
    /** The HTTP status when reason is 'status'. */
    readonly status?: number,
  ) {
    super('PROVIDER_ERROR', `${port} model: ${message}`, { port, reason, ...(status ? { status } : {}) });
  }
}
