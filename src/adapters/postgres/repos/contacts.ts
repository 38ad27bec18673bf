import { sql } from 'kysely';
import { UNKNOWN_CONTACT_NAME } from '../../../domain/contacts.js';
import type { ContactMerge, ContactRow, ContactsRepo } from '../../../store/contacts.js';
import type { Db } from '../database.js';

const consentOf = (c: ContactMerge) => (c.consent ? JSON.stringify(c.consent) : null);
const metadataOf = (c: ContactMerge) => (c.metadata ? JSON.stringify(c.metadata) : null);

/**
 * The one merge rule (`contactChanges`, domain/contacts.ts) as the SET list of one statement:
 * `given` is the row written, where a null field (or the name 'Unknown' a new row takes) was not
 * given, and `stored` the row in place. A value given replaces the stored one, one not given keeps
 * it, and metadata merges key by key. Set-based, so a chunk of 5,000 is one statement.
 */
function mergeAssignments(given: 'excluded' | 'x', stored: 'contacts') {
  const g = (column: string) => sql.ref(`${given}.${column}`);
  const s = (column: string) => sql.ref(`${stored}.${column}`);
  return sql`
    name = coalesce(nullif(${g('name')}, ${UNKNOWN_CONTACT_NAME}), ${s('name')}),
    email = coalesce(${g('email')}, ${s('email')}),
    company = coalesce(${g('company')}, ${s('company')}),
    metadata = ${s('metadata')} || ${g('metadata')},
    timezone = coalesce(${g('timezone')}, ${s('timezone')}),
    consent = coalesce(${g('consent')}, ${s('consent')}),
    updated_at = now()`;
}

export class PgContactsRepo implements ContactsRepo {
  constructor(private readonly db: Db) {}

  async idsOfUser(userId: string, ids: string[]): Promise<string[]> {
    const rows = await this.db
      .selectFrom('contacts')
      .select('id')
      .where('user_id', '=', userId)
      .where('id', 'in', ids)
      .execute();
    return rows.map((row) => row.id);
  }

  async merge(
    userId: string,
    contacts: ContactMerge[],
  ): Promise<Array<{ id: string; phone_number: string }>> {
    const byId = contacts.filter((c) => c.byId);
    const byPhone = contacts.filter((c) => !c.byId);
    const found: Array<{ id: string; phone_number: string }> = [];
    if (byId.length > 0) {
      await sql`
        update contacts set ${mergeAssignments('x', 'contacts')}
        from (select u.id, u.name, u.email, u.company, coalesce(u.meta::jsonb, '{}'::jsonb) as metadata,
                     u.tz as timezone, u.consent::jsonb as consent
              from unnest(${byId.map((c) => c.id)}::text[], ${byId.map((c) => c.name ?? null)}::text[],
                          ${byId.map((c) => c.email ?? null)}::text[], ${byId.map((c) => c.company ?? null)}::text[],
                          ${byId.map(metadataOf)}::text[],
                          ${byId.map((c) => c.timezone ?? null)}::text[], ${byId.map(consentOf)}::text[])
                as u(id, name, email, company, meta, tz, consent)) as x
        where contacts.id = x.id and contacts.user_id = ${userId}`.execute(this.db);
      for (const c of byId) found.push({ id: c.id, phone_number: c.phoneNumber });
    }
    if (byPhone.length > 0) {
      const rows = await sql<{ id: string; phone_number: string }>`
        insert into contacts (id, user_id, phone_number, name, email, company, metadata, timezone, consent)
        select x.id, ${userId}, x.phone, coalesce(x.name, ${UNKNOWN_CONTACT_NAME}), x.email, x.company,
               coalesce(x.meta::jsonb, '{}'::jsonb), x.tz, x.consent::jsonb
        from unnest(${byPhone.map((c) => c.id)}::text[], ${byPhone.map((c) => c.phoneNumber)}::text[],
                    ${byPhone.map((c) => c.name ?? null)}::text[], ${byPhone.map((c) => c.email ?? null)}::text[],
                    ${byPhone.map((c) => c.company ?? null)}::text[],
                    ${byPhone.map(metadataOf)}::text[],
                    ${byPhone.map((c) => c.timezone ?? null)}::text[], ${byPhone.map(consentOf)}::text[])
          as x(id, phone, name, email, company, meta, tz, consent)
        on conflict (user_id, phone_number) do update set ${mergeAssignments('excluded', 'contacts')}
        returning id, phone_number`.execute(this.db);
      found.push(...rows.rows);
    }
    return found;
  }

  getForUser(userId: string, contactId: string): Promise<ContactRow | undefined> {
    return this.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', contactId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  upsertWebContact(
    userId: string,
    contact: { id: string; phoneNumber: string; name: string },
    now: Date,
  ): Promise<{ id: string; name: string; phone_number: string }> {
    return this.db
      .insertInto('contacts')
      .values({ id: contact.id, user_id: userId, phone_number: contact.phoneNumber, name: contact.name })
      .onConflict((oc) => oc.columns(['user_id', 'phone_number']).doUpdateSet({ updated_at: now }))
      .returning(['id', 'name', 'phone_number'])
      .executeTakeFirstOrThrow();
  }
}
