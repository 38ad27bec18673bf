import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/domain/errors.js';
import { errorBody, fieldErrorsOf } from '../../src/http/errors.js';

describe('error bodies', () => {
  it("maps codes to the spec's bodies", () => {
    expect(errorBody(new AppError('UNAUTHORIZED', 'anything'))).toEqual({
      status: 401,
      body: { error: 'Unauthorized', message: 'Invalid or missing API key' },
    });
    expect(errorBody(new AppError('ADMIN_UNAUTHORIZED', 'anything'))).toEqual({
      status: 401,
      body: { error: 'Unauthorized', message: 'Invalid or missing admin token' },
    });
    expect(errorBody(new AppError('FORBIDDEN'))).toEqual({
      status: 403,
      body: { error: 'Forbidden', message: 'Access denied' },
    });
    expect(errorBody(new AppError('NOT_FOUND', 'secret detail'))).toEqual({
      status: 404,
      body: { error: 'Not Found', message: 'Resource not found' },
    });
    expect(
      errorBody(
        new AppError('INSUFFICIENT_CREDITS', 'need 3, have 1', {
          estimatedMinutesRequired: 3,
          availableMinutes: 1,
        }),
      ),
    ).toEqual({
      status: 402,
      body: {
        error: 'Insufficient call minutes',
        code: 'INSUFFICIENT_CREDITS',
        message: 'need 3, have 1',
        details: { estimatedMinutesRequired: 3, availableMinutes: 1 },
      },
    });
    expect(errorBody(new AppError('CALL_IN_PROGRESS', 'busy', { callId: 'call_1' }))).toEqual({
      status: 409,
      body: { message: 'busy', callId: 'call_1' },
    });
    expect(errorBody(new AppError('INTERNAL', 'stack trace here'))).toEqual({
      status: 500,
      body: { error: 'Internal Server Error', message: 'An unexpected error occurred' },
    });
  });

  it('answers CONCURRENCY_LIMIT with 429 and the code', () => {
    expect(errorBody(new AppError('CONCURRENCY_LIMIT', '10 calls are in progress'))).toEqual({
      status: 429,
      body: { error: 'Too Many Requests', code: 'CONCURRENCY_LIMIT', message: '10 calls are in progress' },
    });
  });

  it('names nested fields with dots and missing ones by name', () => {
    expect(
      fieldErrorsOf([
        {
          instancePath: '',
          keyword: 'required',
          params: { missingProperty: 'agentId' },
          message: "must have required property 'agentId'",
        },
        {
          instancePath: '/contacts/12/phoneNumber',
          keyword: 'minLength',
          params: {},
          message: 'must NOT have fewer than 10 characters',
        },
        {
          instancePath: '/contacts/12/phoneNumber',
          keyword: 'pattern',
          params: {},
          message: 'must match pattern',
        },
        {
          instancePath: '/options',
          keyword: 'additionalProperties',
          params: { additionalProperty: 'speed' },
          message: 'x',
        },
      ]),
    ).toEqual({
      agentId: ['is required'],
      'contacts.12.phoneNumber': ['must NOT have fewer than 10 characters', 'must match pattern'],
      'options.speed': ['is not a recognised field'],
    });
  });

  it('names fields called like built-in object properties instead of failing on them', () => {
    const issues = [
      'toString',
      'valueOf',
      'hasOwnProperty',
      '__defineGetter__',
      '__proto__',
      'constructor',
    ].map((name) => ({
      instancePath: '',
      keyword: 'additionalProperties',
      params: { additionalProperty: name },
    }));
    const out = fieldErrorsOf(issues);
    expect(Object.keys(out)).toEqual([
      'toString',
      'valueOf',
      'hasOwnProperty',
      '__defineGetter__',
      '__proto__',
      'constructor',
    ]);
    for (const list of Object.values(out)) expect(list).toEqual(['is not a recognised field']);
    // An own key, so the answer's JSON carries it too.
    expect(JSON.stringify(out)).toContain('"__proto__":["is not a recognised field"]');
  });

  it('names the allowed values of an enum, a literal and a union of literals', () => {
    expect(
      fieldErrorsOf([
        {
          instancePath: '/status',
          keyword: 'enum',
          params: { allowedValues: ['ONGOING', 'COMPLETED'] },
          message: 'must be equal to one of the allowed values',
        },
        {
          instancePath: '/format',
          keyword: 'const',
          params: { allowedValue: 'csv' },
          message: 'must be equal to constant',
        },
        {
          instancePath: '/kind',
          keyword: 'const',
          params: { allowedValue: 'a' },
          message: 'must be equal to constant',
        },
        {
          instancePath: '/kind',
          keyword: 'const',
          params: { allowedValue: 'b' },
          message: 'must be equal to constant',
        },
        { instancePath: '/kind', keyword: 'anyOf', params: {}, message: 'must match a schema in anyOf' },
        { instancePath: '/size', keyword: 'anyOf', params: {}, message: 'must match a schema in anyOf' },
      ]),
    ).toEqual({
      status: ['must be one of: ONGOING, COMPLETED'],
      format: ['must be one of: csv'],
      kind: ['must be one of: a, b'],
      size: ['must match a schema in anyOf'],
    });
  });
});
