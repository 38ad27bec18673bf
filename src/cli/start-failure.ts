import path from 'node:path';
import type { Config } from '../config.js';
import { DataDirLockedError, UnreachableError } from '../start-errors.js';
import { serverAddress } from './banner.js';

/** A start that cannot go on, said in one line with the fix; the CLI prints it and exits 1. */
export class StartFailure extends Error {
  override name = 'StartFailure';
}

type Where = Pick<Config, 'port' | 'host' | 'dataDir'>;

interface SystemError {
  code?: unknown;
  syscall?: unknown;
  path?: unknown;
  address?: unknown;
  port?: unknown;
}

/**
 * The line for a failure whose cause is outside the code (a port, a folder, a server, another
 * process), or null for anything else, which is a bug (the CLI prints it as an unexpected error).
 */
export function explainStartFailure(error: unknown, where: Where): string | null {
  if (error instanceof DataDirLockedError) {
    return `The embedded database in ${error.dir} is in use by process ${error.pid} (another outdial): stop it, give this one its own OUTDIAL_DATA_DIR, or set DATABASE_URL to share a PostgreSQL server`;
  }
  if (error instanceof UnreachableError) return unreachable(error);
  if (!(error instanceof Error)) return null;
  const { code, syscall, path: file } = error as SystemError;
  if (syscall === 'listen') {
    const port =
      typeof (error as SystemError).port === 'number' ? Number((error as SystemError).port) : where.port;
    if (code === 'EADDRINUSE') {
      return `Port ${port} is in use (another outdial?): stop it, or set PORT=${port < 65535 ? port + 1 : 3000}`;
    }
    if (code === 'EACCES') return `Port ${port} needs privileges this user lacks: set PORT to 1024 or above`;
    if (code === 'EADDRNOTAVAIL') {
      return `HOST=${where.host} is not an address of this machine: set HOST to one of its addresses, or 0.0.0.0 for all`;
    }
    return null;
  }
  if (typeof file === 'string' && typeof code === 'string' && inside(where.dataDir, file)) {
    return dataDirLine(code, where.dataDir, file);
  }
  return null;
}

function inside(dir: string, file: string): boolean {
  const relative = path.relative(dir, path.resolve(file));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function dataDirLine(code: string, dir: string, file: string): string | null {
  const fix = 'or set OUTDIAL_DATA_DIR to another folder';
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return `The data dir ${dir} cannot be used by this user (permission denied on ${file}): give it write access, ${fix}`;
    case 'ENOSPC':
    case 'EDQUOT':
      return `The data dir ${dir} is full (no space left writing ${file}): free some space, ${fix} on another disk`;
    case 'EROFS':
      return `The data dir ${dir} is on a read-only file system: ${fix.replace(/^or /, '')} that is writable`;
    case 'EEXIST':
    case 'ENOTDIR':
      return `The data dir ${dir} is not a folder (${file} is a file): move the file away, ${fix}`;
    default:
      return null;
  }
}

function unreachable(error: UnreachableError): string {
  const where = serverAddress(error.url);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === 'string' ? cause.code : '';
  const message = typeof cause?.message === 'string' ? cause.message : String(error.cause);
  if (error.dependency === 'redis') {
    if (/WRONGPASS|NOAUTH|invalid password/i.test(message)) {
      return `Redis at ${where} refused the login (${message}): fix the password in REDIS_URL`;
    }
    return `Redis at ${where} is not answering (${code || message}): start it, fix REDIS_URL, or unset REDIS_URL to keep the live view in this process`;
  }
  // PostgreSQL's own refusals carry its SQLSTATE: 28P01 wrong password, 28000 no such role or no
  // pg_hba.conf entry, 3D000 no such database, 57P03 starting up or shutting down.
  if (code === '28P01' || code === '28000') {
    return `PostgreSQL at ${where} refused the login (${message}): fix the user or password in DATABASE_URL`;
  }
  if (code === '3D000') {
    const name = new URL(error.url).pathname.slice(1);
    return `PostgreSQL at ${where} has no database "${name}": create it (createdb ${name}), or fix DATABASE_URL`;
  }
  return `PostgreSQL at ${where} is not answering (${code || message}): start it, or fix DATABASE_URL`;
}

/**
 * What the CLI prints for an error it did not expect (a bug of ours): one line, or the stack when
 * LOG_LEVEL is debug or trace, for whoever reports it.
 */
export function unexpectedErrorText(error: unknown, logLevel: string | undefined): string {
  if ((logLevel === 'debug' || logLevel === 'trace') && error instanceof Error && error.stack) {
    return `${error.stack}\n`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return `outdial: unexpected error: ${message} (LOG_LEVEL=debug prints where; please report it)\n`;
}
