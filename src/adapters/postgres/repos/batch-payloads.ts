import type { BatchPayloadsRepo } from '../../../store/batch-payloads.js';
import type { Db } from '../database.js';

export class PgBatchPayloadsRepo implements BatchPayloadsRepo {
  constructor(private readonly db: Db) {}

  async insert(batchId: string, body: string): Promise<void> {
    await this.db.insertInto('batch_payloads').values({ batch_id: batchId, body }).execute();
  }

  async body(batchId: string): Promise<string | undefined> {
    const payload = await this.db
      .selectFrom('batch_payloads')
      .select('body')
      .where('batch_id', '=', batchId)
      .executeTakeFirst();
    return payload?.body;
  }

  async delete(batchId: string): Promise<void> {
    await this.db.deleteFrom('batch_payloads').where('batch_id', '=', batchId).execute();
  }
}
