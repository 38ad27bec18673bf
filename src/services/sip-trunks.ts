import { AppError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { strictPhone } from '../domain/phone.js';
import type { SipTrunk, TrunkDirectory } from '../ports.js';
import type { SipTrunkRow } from '../store/sip-trunks.js';
import type { Deps } from './deps.js';

/** A SIP trunk as the admin interface shows it: the password never leaves the server. */
export interface SipTrunkView {
  id: string;
  userId: string;
  name: string;
  host: string;
  port: number;
  transport: 'udp';
  username: string | null;
  hasPassword: boolean;
  fromNumber: string;
  maxCallsPerSecond: number | null;
  maxConcurrentCalls: number | null;
  createdAt: string;
  updatedAt: string;
}

export interface SipTrunkInput {
  name?: string;
  host?: string;
  port?: number;
  transport?: 'udp';
  username?: string | null;
  password?: string | null;
  fromNumber?: string;
  maxCallsPerSecond?: number | null;
  maxConcurrentCalls?: number | null;
}

const HOST =
  /^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$|^\d{1,3}(\.\d{1,3}){3}$|^\[[0-9a-fA-F:.]+\]$/;

function invalid(field: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', `${field} ${message}`, { fieldErrors: { [field]: [message] } });
}

export class SipTrunkService implements TrunkDirectory {
  constructor(private readonly deps: Pick<Deps, 'store' | 'clock' | 'sealer'>) {}

  async create(
    userId: string,
    input: SipTrunkInput & { name: string; host: string; fromNumber: string },
  ): Promise<SipTrunkView> {
    if (!(await this.deps.store.users.exists(userId))) throw new AppError('NOT_FOUND', 'User not found');
    const checked = check(input);
    const row = await this.deps.store.sipTrunks.insert({
      id: newId('trk'),
      user_id: userId,
      name: input.name,
      host: input.host,
      port: input.port ?? 5060,
      transport: input.transport ?? 'udp',
      username: input.username ?? null,
      password_encrypted: input.password ? this.deps.sealer.seal(input.password) : null,
      from_number: checked.fromNumber ?? input.fromNumber,
      max_calls_per_second: input.maxCallsPerSecond ?? null,
      max_concurrent_calls: input.maxConcurrentCalls ?? null,
    });
    return toView(row);
  }

  async list(userId: string): Promise<SipTrunkView[]> {
    const rows = await this.deps.store.sipTrunks.listForUser(userId);
    return rows.map(toView);
  }

  async get(trunkId: string): Promise<SipTrunkView> {
    const row = await this.deps.store.sipTrunks.get(trunkId);
    if (!row) throw new AppError('NOT_FOUND', 'SIP trunk not found');
    return toView(row);
  }

  async update(trunkId: string, input: SipTrunkInput): Promise<SipTrunkView> {
    const checked = check(input);
    const row = await this.deps.store.sipTrunks.update(
      trunkId,
      {
        ...(input.name === undefined ? {} : { name: input.name }),
        ...(input.host === undefined ? {} : { host: input.host }),
        ...(input.port === undefined ? {} : { port: input.port }),
        ...(input.transport === undefined ? {} : { transport: input.transport }),
        ...(input.username === undefined ? {} : { username: input.username }),
        ...(input.password === undefined
          ? {}
          : { password_encrypted: input.password ? this.deps.sealer.seal(input.password) : null }),
        ...(checked.fromNumber === undefined ? {} : { from_number: checked.fromNumber }),
        ...(input.maxCallsPerSecond === undefined ? {} : { max_calls_per_second: input.maxCallsPerSecond }),
        ...(input.maxConcurrentCalls === undefined ? {} : { max_concurrent_calls: input.maxConcurrentCalls }),
      },
      this.deps.clock.now(),
    );
    if (!row) throw new AppError('NOT_FOUND', 'SIP trunk not found');
    return toView(row);
  }

  /** Deletes a trunk no agent uses; one in use is a 409 naming the agents. */
  async delete(trunkId: string): Promise<void> {
    await this.deps.store.tx(async (repos) => {
      if (!(await repos.sipTrunks.lockForDelete(trunkId)))
        throw new AppError('NOT_FOUND', 'SIP trunk not found');
      const users = await repos.agents.idsUsingTrunk(trunkId);
      if (users.length > 0) {
        throw new AppError(
          'CONFLICT',
          `SIP trunk ${trunkId} is used by agent${users.length === 1 ? '' : 's'} ${users.join(', ')}; point ${users.length === 1 ? 'it' : 'them'} elsewhere first`,
        );
      }
      await repos.sipTrunks.delete(trunkId);
    });
  }

  /** A trunk as the SIP provider dials through it, password in clear (never for the API). */
  async forDialing(trunkId: string): Promise<SipTrunk | null> {
    const row = await this.deps.store.sipTrunks.get(trunkId);
    if (!row) return null;
    return {
      id: row.id,
      host: row.host,
      port: row.port,
      username: row.username,
      password: row.password_encrypted ? this.deps.sealer.open(row.password_encrypted) : null,
      fromNumber: row.from_number,
      maxCallsPerSecond: row.max_calls_per_second,
      maxConcurrentCalls: row.max_concurrent_calls,
    };
  }
}

function check(input: SipTrunkInput): { fromNumber?: string } {
  if (input.host !== undefined && !HOST.test(input.host)) {
    throw invalid('host', 'must be a host name or an IP address, without scheme or port');
  }
  if (input.fromNumber === undefined) return {};
  const fromNumber = strictPhone(input.fromNumber);
  if (!fromNumber) throw invalid('fromNumber', 'must be an E.164 phone number such as +14155550100');
  return { fromNumber };
}

function toView(row: SipTrunkRow): SipTrunkView {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    host: row.host,
    port: row.port,
    transport: row.transport,
    username: row.username,
    hasPassword: row.password_encrypted !== null,
    fromNumber: row.from_number,
    maxCallsPerSecond: row.max_calls_per_second,
    maxConcurrentCalls: row.max_concurrent_calls,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
