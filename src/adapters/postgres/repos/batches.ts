import { sql } from 'kysely';
import type { BatchStatus, CallingWindow } from '../../../domain/batch.js';
import type { BatchesRepo, BatchListRow, BatchRow } from '../../../store/batches.js';
import type { Db } from '../database.js';

export class PgBatchesRepo implements BatchesRepo {
  constructor(private readonly db: Db) {}

  getForUser(userId: string, batchId: string): Promise<BatchRow | undefined> {
    return this.db
      .selectFrom('batches')
      .selectAll()
      .where('id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  nameForUser(userId: string, batchId: string): Promise<{ id: string; name: string } | undefined> {
    return this.db
      .selectFrom('batches')
      .select(['id', 'name'])
      .where('id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  zoneAndWindow(
    batchId: string,
  ): Promise<{ timezone: string; calling_window: CallingWindow | null } | undefined> {
    return this.db
      .selectFrom('batches')
      .select(['timezone', 'calling_window'])
      .where('id', '=', batchId)
      .executeTakeFirst();
  }

  list(
    userId: string,
    filters: { status?: BatchStatus; tag?: string },
    before: { id: string; created_at: Date } | null,
    limit: number,
  ): Promise<BatchListRow[]> {
    let query = this.db
      .selectFrom('batches')
      .select([
        'id',
        'name',
        'status',
        'total',
        'processed',
        'succeeded',
        'failed',
        'created_at',
        'agent_id',
        'priority',
        'tags',
      ])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit);
    if (filters.status) query = query.where('status', '=', filters.status);
    if (filters.tag) query = query.where(sql<boolean>`tags @> array[${filters.tag}]::text[]`);
    if (before) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '<', before.created_at),
          eb.and([eb('created_at', '=', before.created_at), eb('id', '<', before.id)]),
        ]),
      );
    }
    return query.execute();
  }

  position(userId: string, batchId: string): Promise<{ id: string; created_at: Date } | undefined> {
    return this.db
      .selectFrom('batches')
      .select(['id', 'created_at'])
      .where('id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }
}
