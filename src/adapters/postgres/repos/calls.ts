import type { CallsRepo } from '../../../store/calls.js';
import type { Db } from '../database.js';

export class PgCallsRepo implements CallsRepo {
  constructor(private readonly db: Db) {}

  async ownerOf(callId: string): Promise<string | undefined> {
    const call = await this.db
      .selectFrom('calls')
      .select('user_id')
      .where('id', '=', callId)
      .executeTakeFirst();
    return call?.user_id;
  }
}
