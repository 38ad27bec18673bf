import { AppError } from '../domain/errors.js';
import type { Repos } from '../store/index.js';
import type { SuppressionRow } from '../store/suppressions.js';
import type { Deps } from './deps.js';
import { defaultCountryOf, phoneOrRefuse } from './phone-numbers.js';

/** The reason an opt-out heard on a call is stored with (issue 15). */
export const OPT_OUT_REASON = 'opt-out';

/** A number on a user's suppression list, as the API shows it. */
export interface Suppression {
  phoneNumber: string;
  reason: string | null;
  /** The call the callee asked not to be called again on (opt-outs); null when added by hand. */
  sourceCallId: string | null;
  createdAt: string;
}

function view(row: SuppressionRow): Suppression {
  return {
    phoneNumber: row.phone_number,
    reason: row.reason,
    sourceCallId: row.source_call_id,
    createdAt: row.created_at.toISOString(),
  };
}

/**
 * Whether `phoneNumber` (E.164) is on the user's list. Takes the caller's transaction, so a dial
 * decides on the list as it stands when the dial intent is recorded.
 */
export function isSuppressed(repos: Repos, userId: string, phoneNumber: string): Promise<boolean> {
  return repos.suppressions.has(userId, phoneNumber);
}

/** Which of `phoneNumbers` (E.164) are on the user's list: one statement for any number of them (preflight). */
export async function suppressedAmong(
  repos: Repos,
  userId: string,
  phoneNumbers: string[],
): Promise<Set<string>> {
  if (phoneNumbers.length === 0) return new Set();
  return new Set(await repos.suppressions.among(userId, phoneNumbers));
}

/**
 * Adds an opt-out heard on `callId` to the user's list, in the caller's transaction (the one that
 * stores the call's analysis). A number already on the list keeps its record (the first reason and
 * date stand).
 */
export async function recordOptOut(
  repos: Repos,
  entry: { userId: string; phoneNumber: string; callId: string; now: Date },
): Promise<void> {
  await repos.suppressions.addIfAbsent({
    userId: entry.userId,
    phoneNumber: entry.phoneNumber,
    reason: OPT_OUT_REASON,
    sourceCallId: entry.callId,
    now: entry.now,
  });
}

/**
 * A page cursor: the last item's creation time in microseconds (the column's precision, which a
 * JS Date does not hold) and its number, so a page boundary stays exact even when the item it
 * names is removed meanwhile.
 */
function encodeCursor(micros: string, phoneNumber: string): string {
  return Buffer.from(`${micros}|${phoneNumber}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { micros: string; phoneNumber: string } {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(\d{1,20})\|(\+\d{6,15})$/.exec(text);
  if (!match?.[1] || !match[2]) {
    throw new AppError('INVALID_REQUEST', 'cursor is not one a previous page gave', {
      fieldErrors: { cursor: ['is not the X-Next-Cursor of a previous page'] },
    });
  }
  return { micros: match[1], phoneNumber: match[2] };
}

/** The per-user suppression list: `POST|GET /api/v1/suppressions`, `DELETE /api/v1/suppressions/{phoneNumber}`. */
export class SuppressionService {
  constructor(private readonly deps: Pick<Deps, 'store' | 'clock' | 'config'>) {}

  /**
   * Adds a number. `created` is false when it was already on the list: the stored record is
   * answered unchanged (200), so adding twice is safe and never rewrites an opt-out's source.
   */
  async add(
    userId: string,
    input: { phoneNumber: string; reason?: string | undefined },
  ): Promise<{ created: boolean; suppression: Suppression }> {
    const { store, clock } = this.deps;
    const country = await defaultCountryOf(this.deps, userId);
    const phoneNumber = phoneOrRefuse(input.phoneNumber, country, 'phoneNumber');
    const inserted = await store.suppressions.addIfAbsent({
      userId,
      phoneNumber,
      reason: input.reason ?? null,
      sourceCallId: null,
      now: clock.now(),
    });
    if (inserted) return { created: true, suppression: view(inserted) };
    const existing = await store.suppressions.get(userId, phoneNumber);
    if (!existing) throw new Error(`Suppression ${phoneNumber} vanished`);
    return { created: false, suppression: view(existing) };
  }

  /** The user's list, newest first; `nextCursor` is null on the last page. */
  async list(
    userId: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<{ items: Suppression[]; nextCursor: string | null }> {
    const after = page.cursor ? decodeCursor(page.cursor) : null;
    const rows = await this.deps.store.suppressions.page(userId, after, page.limit + 1);
    const items = rows.slice(0, page.limit);
    const last = items.at(-1);
    return {
      items: items.map(view),
      nextCursor: rows.length > page.limit && last ? encodeCursor(last.micros, last.phone_number) : null,
    };
  }

  /** The number's record on the user's list (looked up as `add` would store it), or null. */
  async find(userId: string, rawNumber: string): Promise<Suppression | null> {
    const country = await defaultCountryOf(this.deps, userId);
    const phoneNumber = phoneOrRefuse(rawNumber, country, 'phoneNumber');
    const row = await this.deps.store.suppressions.get(userId, phoneNumber);
    return row ? view(row) : null;
  }

  /** Removes a number; 404 when it is not on the user's list. */
  async remove(userId: string, rawNumber: string): Promise<void> {
    const country = await defaultCountryOf(this.deps, userId);
    const phoneNumber = phoneOrRefuse(rawNumber, country, 'phoneNumber', 'INVALID_PARAMETER');
    if (!(await this.deps.store.suppressions.remove(userId, phoneNumber))) throw new AppError('NOT_FOUND');
  }
}
