import { randomBytes } from 'node:crypto';
import { DEFAULT_MAX_CONCURRENT_CALLS, dialAllowance } from '../domain/allowance.js';
import { AppError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { StoredWebhookSecrets, UserRow } from '../store/users.js';
import { callLoad } from './call-load.js';
import type { Deps } from './deps.js';
import { effectiveCountry, userCountry } from './phone-numbers.js';
import type { Sealer } from './sealing.js';

/** GET /api/v1/account: what a user may still spend and run, and what runs now. */
export interface AccountView {
  userId: string;
  availableMinutes: number;
  /** Minutes held back for the calls in progress (one each), not yet charged. */
  reservedMinutes: number;
  maxConcurrentCalls: number;
  /** Calls in progress (single and batch), the figure the concurrency limit is checked against. */
  activeCalls: number;
  /** The country numbers without + are read in: the user's own, else OUTDIAL_DEFAULT_COUNTRY. */
  defaultCountry: string;
}

export interface UserView {
  id: string;
  name: string;
  email: string | null;
  availableMinutes: number;
  /** Most calls (single and batch) the user may have in progress at once. */
  maxConcurrentCalls: number;
  /** The country this user's numbers without + are read in; null: the server's OUTDIAL_DEFAULT_COUNTRY. */
  defaultCountry: string | null;
}

/** The days the account's usage chart covers. */
export const USAGE_DAYS = 30;
const DAY_MS = 86_400_000;

/** How long the previous webhook secret keeps signing after a rotation, so receivers can switch over. */
export const WEBHOOK_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The one rule for which secrets sign now: the current one, and the previous one while a
 * rotation's overlap lasts; opened, never the sealed text.
 */
export function openWebhookSecrets(
  row: StoredWebhookSecrets,
  sealer: Sealer,
  now: Date,
): { secret: string; previousSecret: string | null } {
  const overlapping =
    row.previous_webhook_secret !== null &&
    row.webhook_secret_rotated_at !== null &&
    now.getTime() - row.webhook_secret_rotated_at.getTime() < WEBHOOK_SECRET_OVERLAP_MS;
  return {
    secret: sealer.open(row.webhook_secret),
    previousSecret:
      overlapping && row.previous_webhook_secret ? sealer.open(row.previous_webhook_secret) : null,
  };
}

export class UserService {
  constructor(private readonly deps: Pick<Deps, 'store' | 'clock' | 'sealer' | 'config'>) {}

  async create(input: {
    name: string;
    email?: string;
    minutes?: number;
    maxConcurrentCalls?: number;
    defaultCountry?: string | null;
  }): Promise<UserView> {
    const defaultCountry = userCountry(input.defaultCountry ?? null);
    const row = await this.deps.store.users.insert({
      id: newId('usr'),
      default_country: defaultCountry,
      max_concurrent_calls: input.maxConcurrentCalls ?? DEFAULT_MAX_CONCURRENT_CALLS,
      name: input.name,
      email: input.email ?? null,
      available_minutes: input.minutes ?? 0,
      webhook_secret: this.deps.sealer.seal(newWebhookSecret()),
    });
    return toView(row);
  }

  async get(userId: string): Promise<UserView> {
    const row = await this.deps.store.users.get(userId);
    if (!row) throw new AppError('NOT_FOUND', 'User not found');
    return toView(row);
  }

  /**
   * Every user, newest first, in pages for `GET /admin/v1/users`. Ids are time-sortable
   * (src/domain/ids.ts), so the id alone orders the list and is the cursor: a user created while
   * an operator pages sorts before the first page, never between two pages.
   */
  async list(page: { limit: number; cursor?: string | undefined }): Promise<{
    items: UserView[];
    nextCursor: string | null;
  }> {
    const rows = await this.deps.store.users.list(page.limit + 1, page.cursor);
    const items = rows.slice(0, page.limit);
    const last = items.at(-1);
    return {
      items: items.map(toView),
      nextCursor: rows.length > page.limit && last ? last.id : null,
    };
  }

  /**
   * The account view, from the same figures a dial is admitted on (call-load.ts and the allowance
   * rule), read in one statement without a lock: a view, not a decision.
   */
  async account(userId: string): Promise<AccountView> {
    const [load, user] = await Promise.all([
      callLoad(this.deps.store, userId, { lock: false }),
      this.deps.store.users.get(userId),
    ]);
    if (!load || !user) throw new AppError('NOT_FOUND', 'User not found');
    return {
      userId,
      availableMinutes: load.availableMinutes,
      reservedMinutes: dialAllowance(load).reservedMinutes,
      maxConcurrentCalls: load.maxConcurrentCalls,
      activeCalls: load.callsInProgress,
      defaultCountry: effectiveCountry(user.default_country, this.deps.config.defaultCountry),
    };
  }

  /**
   * Minutes charged per UTC day over the last `days` days (today included), oldest first, a day
   * without calls at 0: the dashboard's usage chart.
   */
  async usageByDay(userId: string, days = USAGE_DAYS): Promise<Array<{ day: string; minutes: number }>> {
    const today = Date.parse(this.deps.clock.now().toISOString().slice(0, 10));
    const since = new Date(today - (days - 1) * DAY_MS);
    const charged = new Map(
      (await this.deps.store.calls.usageByDay(userId, since)).map((row) => [row.day, row.minutes]),
    );
    return Array.from({ length: days }, (_, index) => {
      const day = new Date(since.getTime() + index * DAY_MS).toISOString().slice(0, 10);
      return { day, minutes: charged.get(day) ?? 0 };
    });
  }

  /** Changes the fields given; the others keep their values. */
  async update(
    userId: string,
    input: {
      name?: string;
      email?: string | null;
      maxConcurrentCalls?: number;
      defaultCountry?: string | null;
    },
  ): Promise<UserView> {
    const row = await this.deps.store.users.update(
      userId,
      {
        ...(input.name === undefined ? {} : { name: input.name }),
        ...(input.email === undefined ? {} : { email: input.email }),
        ...(input.maxConcurrentCalls === undefined ? {} : { max_concurrent_calls: input.maxConcurrentCalls }),
        ...(input.defaultCountry === undefined ? {} : { default_country: userCountry(input.defaultCountry) }),
      },
      this.deps.clock.now(),
    );
    if (!row) throw new AppError('NOT_FOUND', 'User not found');
    return toView(row);
  }

  /** Adds (or, with a negative number, takes back) minutes in one atomic update. */
  async addCredits(userId: string, minutes: number): Promise<{ availableMinutes: number }> {
    const availableMinutes = await this.deps.store.users.addMinutes(userId, minutes, this.deps.clock.now());
    if (availableMinutes === undefined) throw new AppError('NOT_FOUND', 'User not found');
    return { availableMinutes };
  }

  async webhookSecret(
    userId: string,
  ): Promise<{ secret: string; previousSecret: string | null; rotatedAt: string | null }> {
    const row = await this.deps.store.users.webhookSecrets(userId);
    if (!row) throw new AppError('NOT_FOUND', 'User not found');
    return {
      ...openWebhookSecrets(row, this.deps.sealer, this.deps.clock.now()),
      rotatedAt: row.webhook_secret_rotated_at?.toISOString() ?? null,
    };
  }

  /** A new secret; the old one keeps signing beside it for 24 hours. */
  async rotateWebhookSecret(userId: string) {
    const now = this.deps.clock.now();
    const rotated = await this.deps.store.users.rotateWebhookSecret(
      userId,
      this.deps.sealer.seal(newWebhookSecret()),
      now,
    );
    if (!rotated) throw new AppError('NOT_FOUND', 'User not found');
    return this.webhookSecret(userId);
  }
}

function toView(row: UserRow): UserView {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    availableMinutes: row.available_minutes,
    maxConcurrentCalls: row.max_concurrent_calls,
    defaultCountry: row.default_country,
  };
}
