import type { FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
import { findInputProblem } from '../domain/input.js';
import { invalidParameter } from './errors.js';
import type { App } from './route-kit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body's text as received: a batch stores it as its durable record. */
    rawBody?: string;
  }
}

/**
 * The one JSON body parser of the app: parses the text once, keeps it (a batch stores it rather
 * than serialising 16 MB again), and refuses before any schema or SQL sees it what PostgreSQL
 * would refuse later (NUL, lone surrogates) and what no stack should walk (deep nesting).
 */
export function parseJsonBody(request: FastifyRequest, text: string): unknown {
  if (text.length === 0) throw new AppError('INVALID_JSON', 'The body is empty; send a JSON object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AppError('INVALID_JSON', 'The body is not valid JSON');
  }
  const problem = findInputProblem(parsed);
  if (problem) {
    throw new AppError('INVALID_REQUEST', `${problem.field} ${problem.message}`, {
      fieldErrors: { [problem.field]: [problem.message] },
    });
  }
  request.rawBody = text;
  return parsed;
}

/** Query strings and path parameters get the same text rules as bodies, answered as a bad parameter. */
function checkParameters(request: FastifyRequest): void {
  for (const part of [request.params, request.query]) {
    const problem = findInputProblem(part, '(query)');
    if (problem) {
      const fieldErrors = { [problem.field]: [problem.message] };
      throw new AppError('INVALID_PARAMETER', invalidParameter(fieldErrors), { fieldErrors });
    }
  }
}

export function registerInputChecks(app: App): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    try {
      done(null, parseJsonBody(request, body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      checkParameters(request);
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });
}
