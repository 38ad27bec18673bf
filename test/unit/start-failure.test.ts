import { describe, expect, it } from 'vitest';
import { explainStartFailure, unexpectedErrorText } from '../../src/cli/start-failure.js';
import { DataDirLockedError, UnreachableError } from '../../src/start-errors.js';

const where = { port: 3000, host: '0.0.0.0', dataDir: '/srv/outdial' };

function systemError(code: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(`${code}: something`), { code, ...fields });
}

function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('a start failure as one line with the fix', () => {
  it('names a full, read-only or forbidden data dir (the cases a test cannot make without root)', () => {
    const file = '/srv/outdial/pgdata/base/1/1259';
    expect(explainStartFailure(systemError('ENOSPC', { syscall: 'write', path: file }), where)).toBe(
      `The data dir /srv/outdial is full (no space left writing ${file}): free some space, or set OUTDIAL_DATA_DIR to another folder on another disk`,
    );
    expect(explainStartFailure(systemError('EROFS', { syscall: 'open', path: file }), where)).toBe(
      'The data dir /srv/outdial is on a read-only file system: set OUTDIAL_DATA_DIR to another folder that is writable',
    );
    expect(explainStartFailure(systemError('EPERM', { syscall: 'open', path: file }), where)).toMatch(
      /^The data dir \/srv\/outdial cannot be used by this user/,
    );
    // A file outside the data dir is not the data dir's fault: no guess.
    expect(explainStartFailure(systemError('EACCES', { syscall: 'open', path: '/etc/x' }), where)).toBeNull();
  });

  it('names the port, and a HOST that is not this machine', () => {
    const listen = { syscall: 'listen', address: '0.0.0.0', port: 3000 };
    expect(explainStartFailure(systemError('EADDRINUSE', listen), where)).toBe(
      'Port 3000 is in use (another outdial?): stop it, or set PORT=3001',
    );
    expect(explainStartFailure(systemError('EACCES', { ...listen, port: 80 }), where)).toBe(
      'Port 80 needs privileges this user lacks: set PORT to 1024 or above',
    );
    expect(explainStartFailure(systemError('EADDRNOTAVAIL', listen), where)).toMatch(
      /^HOST=0\.0\.0\.0 is not/,
    );
  });

  it("tells a refused login from a server that is down, and never shows the URL's password", () => {
    const url = 'postgres://outdial:s3cret@db:5432/calls';
    const login = explainStartFailure(
      new UnreachableError(
        'database',
        url,
        pgError('28P01', 'password authentication failed for user "outdial"'),
      ),
      where,
    );
    expect(login).toBe(
      'PostgreSQL at outdial@db:5432/calls refused the login (password authentication failed for user "outdial"): fix the user or password in DATABASE_URL',
    );
    const redis = explainStartFailure(
      new UnreachableError(
        'redis',
        'redis://:hunter2@cache:6379',
        new Error('WRONGPASS invalid username-password pair'),
      ),
      where,
    );
    expect(redis).toBe(
      'Redis at cache:6379 refused the login (WRONGPASS invalid username-password pair): fix the password in REDIS_URL',
    );
    for (const line of [login, redis]) expect(line).not.toMatch(/s3cret|hunter2/);
  });

  it('names the process holding the embedded database, and leaves a bug alone', () => {
    expect(explainStartFailure(new DataDirLockedError('/srv/outdial/pgdata', 4242), where)).toMatch(
      /^The embedded database in \/srv\/outdial\/pgdata is in use by process 4242 \(another outdial\): /,
    );
    expect(explainStartFailure(new TypeError('x is undefined'), where)).toBeNull();
  });

  it('prints an unexpected error in one line, and its stack only at LOG_LEVEL debug or trace', () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'id')");
    const line =
      "outdial: unexpected error: Cannot read properties of undefined (reading 'id') (LOG_LEVEL=debug prints where; please report it)\n";
    expect(unexpectedErrorText(bug, 'info')).toBe(line);
    expect(unexpectedErrorText(bug, undefined)).toBe(line);
    expect(unexpectedErrorText('thrown text', 'warn')).toBe(
      'outdial: unexpected error: thrown text (LOG_LEVEL=debug prints where; please report it)\n',
    );
    for (const level of ['debug', 'trace']) {
      const text = unexpectedErrorText(bug, level);
      expect(text.startsWith("TypeError: Cannot read properties of undefined (reading 'id')\n    at ")).toBe(
        true,
      );
    }
  });
});
