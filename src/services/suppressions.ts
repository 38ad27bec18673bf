import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import { AppError } from '../domain/errors.js';
import { E164_MESSAGE, normalizeE164 } from '../domain/phone.js';
import type { Deps } from './deps.js';

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

interface SuppressionRow {
  phone_number: string;
  reason: string | null;
  source_call_id: string | null;
  created_at: Date;
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
 * The number as stored (E.164), or a 400 naming `field`: INVALID_REQUEST for a body field, the
 * spec's plain Bad Request (INVALID_PARAMETER) for a path parameter.
 */
export function suppressionNumber(
  raw: string,
  field = 'phoneNumber',
  code: 'INVALID_REQUEST' | 'INVALID_PARAMETER' = 'INVALID_REQUEST',
): string {
  const number = normalizeE164(raw);
  if (!number) {
    throw new AppError(code, `${field} ${E164_MESSAGE}`, { fieldErrors: { [field]: [E164_MESSAGE] } });
  }
  return number;
}

/**
 * Whether `phoneNumber` (E.164) is on the user's list. Takes the caller's transaction, so a dial
 * decides on the list as it stands when the dial intent is recorded.
 */
export async function isSuppressed(db: Db, userId: string, phoneNumber: string): Promise<boolean> {
  const row = await db
    .selectFrom('suppressions')
    .select('phone_number')
    .where('user_id', '=', userId)
    .where('phone_number', '=', phoneNumber)
    .executeTakeFirst();
  return row !== undefined;
}

/** Which of `phoneNumbers` (E.164) are on the user's list: one statement for any number of them (preflight). */
export async function suppressedAmong(db: Db, userId: string, phoneNumbers: string[]): Promise<Set<string>> {
  if (phoneNumbers.length === 0) return new Set();
  const rows = await sql<{ phone_number: string }>`
    select s.phone_number from suppressions s
    join unnest(${phoneNumbers}::text[]) as n(phone_number) on n.phone_number = s.phone_number
    where s.user_id = ${userId}`.execute(db);
  return new Set(rows.rows.map((row) => row.phone_number));
}

/**
 * Adds an opt-out heard on `callId` to the user's list, in the caller's transaction (the one that
 * stores the call's analysis). A number already on the list keeps its record (the first reason and
 * date stand).
 */
export async function recordOptOut(
  db: Db,
  entry: { userId: string; phoneNumber: string; callId: string; now: Date },
): Promise<void> {
  await db
    .insertInto('suppressions')
    .values({
      user_id: entry.userId,
      phone_number: entry.phoneNumber,
      reason: OPT_OUT_REASON,
      source_call_id: entry.callId,
      created_at: entry.now,
    })
    .onConflict((oc) => oc.columns(['user_id', 'phone_number']).doNothing())
    .execute();
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
  constructor(private readonly deps: Pick<Deps, 'db' | 'clock'>) {}

  /**
   * Adds a number. `created` is false when it was already on the list: the stored record is
   * answered unchanged (200), so adding twice is safe and never rewrites an opt-out's source.
   */
  async add(
    userId: string,
    input: { phoneNumber: string; reason?: string | undefined },
  ): Promise<{ created: boolean; suppression: Suppression }> {
    const phoneNumber = suppressionNumber(input.phoneNumber);
    const { db, clock } = this.deps;
    const inserted = await db
      .insertInto('suppressions')
      .values({
        user_id: userId,
        phone_number: phoneNumber,
        reason: input.reason ?? null,
        source_call_id: null,
        created_at: clock.now(),
      })
      .onConflict((oc) => oc.columns(['user_id', 'phone_number']).doNothing())
      .returning(['phone_number', 'reason', 'source_call_id', 'created_at'])
      .executeTakeFirst();
    if (inserted) return { created: true, suppression: view(inserted) };
    const existing = await db
      .selectFrom('suppressions')
      .select(['phone_number', 'reason', 'source_call_id', 'created_at'])
      .where('user_id', '=', userId)
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirstOrThrow();
    return { created: false, suppression: view(existing) };
  }

  /** The user's list, newest first; `nextCursor` is null on the last page. */
  async list(
    userId: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<{ items: Suppression[]; nextCursor: string | null }> {
    const after = page.cursor ? decodeCursor(page.cursor) : null;
    // Ordered as the index suppressions_user_idx reads: newest first, then by number.
    const boundary = after
      ? sql`and (s.created_at < ${sql.raw("timestamptz 'epoch'")} + ${after.micros}::bigint * interval '1 microsecond'
             or (s.created_at = ${sql.raw("timestamptz 'epoch'")} + ${after.micros}::bigint * interval '1 microsecond'
                 and s.phone_number > ${after.phoneNumber}))`
      : sql``;
    const rows = (
      await sql<SuppressionRow & { micros: string }>`
        select s.phone_number, s.reason, s.source_call_id, s.created_at,
               ((extract(epoch from s.created_at) * 1000000)::numeric(30, 0))::text as micros
        from suppressions s
        where s.user_id = ${userId} ${boundary}
        order by s.created_at desc, s.phone_number
        limit ${page.limit + 1}`.execute(this.deps.db)
    ).rows;
    const items = rows.slice(0, page.limit);
    const last = items.at(-1);
    return {
      items: items.map(view),
      nextCursor: rows.length > page.limit && last ? encodeCursor(last.micros, last.phone_number) : null,
    };
  }

  /** Removes a number; 404 when it is not on the user's list. */
  async remove(userId: string, rawNumber: string): Promise<void> {
    const phoneNumber = suppressionNumber(rawNumber, 'phoneNumber', 'INVALID_PARAMETER');
    const deleted = await this.deps.db
      .deleteFrom('suppressions')
      .where('user_id', '=', userId)
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw new AppError('NOT_FOUND');
  }
}
