import { sql } from 'kysely';
import type { SealedColumnsRepo } from '../../../store/sealed-columns.js';
import type { Db } from '../database.js';

export class PgSealedColumnsRepo implements SealedColumnsRepo {
  constructor(private readonly db: Db) {}

  async notSealedWith(
    table: string,
    column: string,
    sealedPrefix: string,
    after: string,
    limit: number,
  ): Promise<Array<{ id: string; value: string }>> {
    const { rows } = await sql<{ id: string; value: string }>`
          select id, ${sql.ref(column)} as value from ${sql.table(table)}
          where id > ${after} and ${sql.ref(column)} is not null
            and ${sql.ref(column)} not like ${`${sealedPrefix}%`}
          order by id limit ${limit}`.execute(this.db);
    return rows;
  }

  async replace(table: string, column: string, id: string, from: string, to: string): Promise<number> {
    const updated = await sql`
            update ${sql.table(table)} set ${sql.ref(column)} = ${to}
            where id = ${id} and ${sql.ref(column)} = ${from}`.execute(this.db);
    return Number(updated.numAffectedRows ?? 0);
  }
}
