import type { ApiKeyRow, KeysRepo } from '../../../store/keys.js';
import type { Db } from '../database.js';

export class PgKeysRepo implements KeysRepo {
  constructor(private readonly db: Db) {}

  insert(key: { id: string; user_id: string; name: string; expires_at: Date | null }): Promise<ApiKeyRow> {
    return this.db
      .insertInto('api_keys')
      .values({ ...key, revoked_at: null, last_used_at: null })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  listForUser(userId: string): Promise<ApiKeyRow[]> {
    return this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  revoke(keyId: string, userId: string | undefined, now: Date): Promise<ApiKeyRow | undefined> {
    let query = this.db
      .updateTable('api_keys')
      .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(now)) }))
      .where('id', '=', keyId);
    if (userId) query = query.where('user_id', '=', userId);
    return query.returningAll().executeTakeFirst();
  }

  touch(
    keyId: string,
    now: Date,
  ): Promise<Pick<ApiKeyRow, 'user_id' | 'expires_at' | 'revoked_at'> | undefined> {
    return this.db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', keyId)
      .returning(['user_id', 'expires_at', 'revoked_at'])
      .executeTakeFirst();
  }
}
