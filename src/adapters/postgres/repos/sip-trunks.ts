import type { SipTrunkFields, SipTrunkRow, SipTrunksRepo } from '../../../store/sip-trunks.js';
import type { Db } from '../database.js';

export class PgSipTrunksRepo implements SipTrunksRepo {
  constructor(private readonly db: Db) {}

  insert(trunk: SipTrunkFields & { id: string; user_id: string }): Promise<SipTrunkRow> {
    return this.db.insertInto('sip_trunks').values(trunk).returningAll().executeTakeFirstOrThrow();
  }

  get(trunkId: string): Promise<SipTrunkRow | undefined> {
    return this.db.selectFrom('sip_trunks').selectAll().where('id', '=', trunkId).executeTakeFirst();
  }

  async existsForUser(trunkId: string, userId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('sip_trunks')
      .select('id')
      .where('id', '=', trunkId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row !== undefined;
  }

  listForUser(userId: string): Promise<SipTrunkRow[]> {
    return this.db
      .selectFrom('sip_trunks')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  listInUse(): Promise<SipTrunkRow[]> {
    return this.db
      .selectFrom('sip_trunks')
      .selectAll()
      .where('id', 'in', (agents) =>
        agents
          .selectFrom('agents')
          .select('sip_trunk_id')
          .where('is_active', '=', true)
          .where('sip_trunk_id', 'is not', null),
      )
      .orderBy('id')
      .execute();
  }

  update(trunkId: string, fields: Partial<SipTrunkFields>, now: Date): Promise<SipTrunkRow | undefined> {
    return this.db
      .updateTable('sip_trunks')
      .set({ ...fields, updated_at: now })
      .where('id', '=', trunkId)
      .returningAll()
      .executeTakeFirst();
  }

  async lockForDelete(trunkId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('sip_trunks')
      .select('id')
      .where('id', '=', trunkId)
      .forUpdate()
      .executeTakeFirst();
    return row !== undefined;
  }

  async delete(trunkId: string): Promise<void> {
    await this.db.deleteFrom('sip_trunks').where('id', '=', trunkId).execute();
  }
}
