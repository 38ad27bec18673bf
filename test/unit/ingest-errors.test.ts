import { describe, expect, it } from 'vitest';
import { isTransientDatabaseError } from '../../src/services/ingest.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('which ingestion failures another pass may not meet', () => {
  it('retries a database that went away', () => {
    for (const code of ['57P01', '08006', '53300', '40001', '40P01', 'ECONNRESET', 'ECONNREFUSED'])
      expect(isTransientDatabaseError(withCode(code)), code).toBe(true);
    expect(isTransientDatabaseError(new Error('Connection terminated unexpectedly'))).toBe(true);
  });

  it('fails at once on what the same body would hit again', () => {
    // 22P05: a \u0000 escape in jsonb; 22021: a NUL in text; 54001: too deep for the server's stack.
    for (const code of ['22P05', '22021', '54001', '23505'])
      expect(isTransientDatabaseError(withCode(code)), code).toBe(false);
    expect(isTransientDatabaseError(new RangeError('Maximum call stack size exceeded'))).toBe(false);
    expect(isTransientDatabaseError('not an error')).toBe(false);
  });
});
