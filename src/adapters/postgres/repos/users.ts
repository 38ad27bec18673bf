import { sql } from 'kysely';
import type { NewUser, StoredWebhookSecrets, UserRow, UsersRepo } from '../../../store/users.js';
import type { Db } from '../database.js';
import { type LockOrder, takeLock } from './locks.js';

/** The user's calls in progress, counted from the calls table (no counter to keep). */
const ongoing = sql<number>`(select count(*)::int from calls where calls.user_id = users.id and calls.status = 'ONGOING')`;

export class PgUsersRepo implements UsersRepo {
  /** `order` is null on the pool, where a row lock would end with its statement. */
  constructor(
    private readonly db: Db,
    private readonly order: LockOrder | null = null,
  ) {}

  insert(user: NewUser): Promise<UserRow> {
    const { max_concurrent_calls, ...rest } = user;
    return this.db
      .insertInto('users')
      .values({
        ...rest,
        // Unset: the column's default (200, migration 017; UserService always sets it).
        ...(max_concurrent_calls === undefined ? {} : { max_concurrent_calls }),
        previous_webhook_secret: null,
        webhook_secret_rotated_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  get(userId: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
  }

  async exists(userId: string): Promise<boolean> {
    const row = await this.db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst();
    return row !== undefined;
  }

  async availableMinutes(userId: string): Promise<number | undefined> {
    const user = await this.db
      .selectFrom('users')
      .select('available_minutes')
      .where('id', '=', userId)
      .executeTakeFirst();
    return user?.available_minutes;
  }

  async hasAny(): Promise<boolean> {
    const row = await this.db.selectFrom('users').select('id').limit(1).executeTakeFirst();
    return row !== undefined;
  }

  list(limit: number, before?: string): Promise<UserRow[]> {
    let query = this.db.selectFrom('users').selectAll().orderBy('id', 'desc').limit(limit);
    if (before) query = query.where('id', '<', before);
    return query.execute();
  }

  update(
    userId: string,
    fields: {
      name?: string;
      email?: string | null;
      max_concurrent_calls?: number;
      default_country?: string | null;
    },
    now: Date,
  ): Promise<UserRow | undefined> {
    return this.db
      .updateTable('users')
      .set({ ...fields, updated_at: now })
      .where('id', '=', userId)
      .returningAll()
      .executeTakeFirst();
  }

  async addMinutes(userId: string, minutes: number, now: Date): Promise<number | undefined> {
    const row = await this.db
      .updateTable('users')
      .set({ available_minutes: sql`available_minutes + ${minutes}`, updated_at: now })
      .where('id', '=', userId)
      .returning('available_minutes')
      .executeTakeFirst();
    return row?.available_minutes;
  }

  webhookSecrets(userId: string): Promise<StoredWebhookSecrets | undefined> {
    return this.db
      .selectFrom('users')
      .select(['webhook_secret', 'previous_webhook_secret', 'webhook_secret_rotated_at'])
      .where('id', '=', userId)
      .executeTakeFirst();
  }

  webhookSecretsOf(userIds: string[]): Promise<Array<StoredWebhookSecrets & { id: string }>> {
    return this.db
      .selectFrom('users')
      .select(['id', 'webhook_secret', 'previous_webhook_secret', 'webhook_secret_rotated_at'])
      .where('id', 'in', userIds)
      .execute();
  }

  async rotateWebhookSecret(userId: string, sealedSecret: string, now: Date): Promise<boolean> {
    const row = await this.db
      .updateTable('users')
      .set({
        // The sealed value moves as it is: sealing is per value, not per column.
        previous_webhook_secret: sql`webhook_secret`,
        webhook_secret: sealedSecret,
        webhook_secret_rotated_at: now,
        updated_at: now,
      })
      .where('id', '=', userId)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  loadEstimate(
    userId: string,
  ): Promise<{ available_minutes: number; max_concurrent_calls: number; ongoing: number } | undefined> {
    return this.db
      .selectFrom('users')
      .select(['available_minutes', 'max_concurrent_calls', ongoing.as('ongoing')])
      .where('id', '=', userId)
      .executeTakeFirst();
  }

  lockLoad(userId: string): Promise<{ available_minutes: number; max_concurrent_calls: number } | undefined> {
    takeLock(this.order, 'users');
    return this.db
      .selectFrom('users')
      .select(['available_minutes', 'max_concurrent_calls'])
      .where('id', '=', userId)
      .forUpdate()
      .executeTakeFirst();
  }

  async ongoingCalls(userId: string): Promise<number> {
    const counted = await this.db
      .selectFrom('users')
      .select(ongoing.as('ongoing'))
      .where('id', '=', userId)
      .executeTakeFirstOrThrow();
    return counted.ongoing;
  }

  async lockOfCalls(callIds: string[]): Promise<void> {
    takeLock(this.order, 'users');
    await sql`
        select id from users
        where id in (select user_id from calls where id = any(${callIds}::text[]))
        order by id for update`.execute(this.db);
  }

  async charge(charges: Array<{ userId: string; minutes: number }>): Promise<void> {
    await sql`
          update users u set available_minutes = u.available_minutes - x.minutes
          from unnest(${charges.map((c) => c.userId)}::text[], ${charges.map((c) => c.minutes)}::int[]) as x(id, minutes)
          where u.id = x.id`.execute(this.db);
  }
}
