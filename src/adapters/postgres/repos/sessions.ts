import type { SessionsRepo } from '../../../store/sessions.js';
import type { Db } from '../database.js';

export class PgSessionsRepo implements SessionsRepo {
  constructor(private readonly db: Db) {}

  async insert(session: {
    id: string;
    user_id: string;
    key_id: string;
    created_at: Date;
    expires_at: Date;
  }): Promise<void> {
    await this.db.insertInto('dashboard_sessions').values(session).execute();
  }

  async deleteExpired(now: Date): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).execute();
  }

  active(id: string, now: Date): Promise<{ user_id: string; key_id: string } | undefined> {
    return this.db
      .selectFrom('dashboard_sessions')
      .select(['user_id', 'key_id'])
      .where('id', '=', id)
      .where('expires_at', '>', now)
      .executeTakeFirst();
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('id', '=', id).execute();
  }
}
