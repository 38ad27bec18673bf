import { sql } from 'kysely';
import type { DialOwnersRepo } from '../../../store/dial-owners.js';
import type { Db } from '../database.js';

const interval = (ms: number) => `${ms} milliseconds`;

export class PgDialOwnersRepo implements DialOwnersRepo {
  constructor(private readonly db: Db) {}

  async take(owner: { id: string; host: string; pid: number }, leaseMs: number): Promise<void> {
    await sql`
      insert into dial_owners (id, host, pid, started_at, renewed_at, lease_until)
      values (${owner.id}, ${owner.host}, ${owner.pid}, now(), now(), now() + ${interval(leaseMs)}::interval)
      on conflict (id) do nothing`.execute(this.db);
  }

  async renew(id: string, leaseMs: number): Promise<void> {
    await sql`
      update dial_owners set renewed_at = now(), lease_until = now() + ${interval(leaseMs)}::interval
      where id = ${id}`.execute(this.db);
  }

  async release(id: string): Promise<void> {
    await sql`update dial_owners set renewed_at = now(), lease_until = now() where id = ${id}`.execute(
      this.db,
    );
  }

  async pruneGone(keepDays: number): Promise<void> {
    await sql`delete from dial_owners where lease_until < now() - ${`${keepDays} days`}::interval`.execute(
      this.db,
    );
  }
}
