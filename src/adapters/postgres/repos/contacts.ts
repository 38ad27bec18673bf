import { sql } from 'kysely';
import type { ContactRow, ContactsRepo, ContactWrite } from '../../../store/contacts.js';
import { type Db, json } from '../database.js';

const consentOf = (c: ContactWrite) => (c.consent ? JSON.stringify(c.consent) : null);
const metadataOf = (c: ContactWrite) => (c.metadata ? JSON.stringify(c.metadata) : null);

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

  async updateById(userId: string, byId: Array<ContactWrite & { id: string }>): Promise<void> {
    await sql`
      update contacts c set
        name = case when x.name is null then c.name else x.name end,
        email = coalesce(x.email, c.email),
        company = coalesce(x.company, c.company),
        metadata = c.metadata || coalesce(x.meta::jsonb, '{}'::jsonb),
        timezone = coalesce(x.tz, c.timezone),
        consent = coalesce(x.consent::jsonb, c.consent),
        updated_at = now()
      from unnest(${byId.map((c) => c.id)}::text[], ${byId.map((c) => c.name ?? null)}::text[],
                  ${byId.map((c) => c.email ?? null)}::text[], ${byId.map((c) => c.company ?? null)}::text[],
                  ${byId.map(metadataOf)}::text[],
                  ${byId.map((c) => c.timezone ?? null)}::text[], ${byId.map(consentOf)}::text[])
        as x(id, name, email, company, meta, tz, consent)
      where c.id = x.id and c.user_id = ${userId}`.execute(this.db);
  }

  async upsertByPhone(
    userId: string,
    byPhone: Array<ContactWrite & { id: string }>,
  ): Promise<Array<{ id: string; phone_number: string }>> {
    const rows = await sql<{ id: string; phone_number: string }>`
      insert into contacts (id, user_id, phone_number, name, email, company, metadata, timezone, consent)
      select x.id, ${userId}, x.phone, coalesce(x.name, 'Unknown'), x.email, x.company, coalesce(x.meta::jsonb, '{}'::jsonb),
             x.tz, x.consent::jsonb
      from unnest(${byPhone.map((c) => c.id)}::text[], ${byPhone.map((c) => c.phoneNumber)}::text[],
                  ${byPhone.map((c) => c.name ?? null)}::text[], ${byPhone.map((c) => c.email ?? null)}::text[],
                  ${byPhone.map((c) => c.company ?? null)}::text[],
                  ${byPhone.map(metadataOf)}::text[],
                  ${byPhone.map((c) => c.timezone ?? null)}::text[], ${byPhone.map(consentOf)}::text[])
        as x(id, phone, name, email, company, meta, tz, consent)
      on conflict (user_id, phone_number) do update set
        name = case when excluded.name = 'Unknown' then contacts.name else excluded.name end,
        email = coalesce(excluded.email, contacts.email),
        company = coalesce(excluded.company, contacts.company),
        metadata = contacts.metadata || excluded.metadata,
        timezone = coalesce(excluded.timezone, contacts.timezone),
        consent = coalesce(excluded.consent, contacts.consent),
        updated_at = now()
      returning id, phone_number`.execute(this.db);
    return rows.rows;
  }

  getForUser(userId: string, contactId: string): Promise<ContactRow | undefined> {
    return this.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', contactId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  upsertForDial(userId: string, contact: ContactWrite & { id: string }, now: Date): Promise<ContactRow> {
    // One statement creates the contact or updates it with the details given, and always returns it.
    return this.db
      .insertInto('contacts')
      .values({
        id: contact.id,
        user_id: userId,
        phone_number: contact.phoneNumber,
        name: contact.name ?? 'Unknown',
        email: contact.email ?? null,
        company: contact.company ?? null,
        metadata: json(contact.metadata ?? {}),
        consent: json(contact.consent ?? null),
      })
      .onConflict((oc) =>
        oc.columns(['user_id', 'phone_number']).doUpdateSet((eb) => ({
          name: contact.name !== undefined ? eb.ref('excluded.name') : eb.ref('contacts.name'),
          email: contact.email !== undefined ? eb.ref('excluded.email') : eb.ref('contacts.email'),
          company: contact.company !== undefined ? eb.ref('excluded.company') : eb.ref('contacts.company'),
          metadata:
            contact.metadata !== undefined
              ? sql`contacts.metadata || excluded.metadata`
              : eb.ref('contacts.metadata'),
          consent: contact.consent !== undefined ? eb.ref('excluded.consent') : eb.ref('contacts.consent'),
          updated_at: now,
        })),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
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
