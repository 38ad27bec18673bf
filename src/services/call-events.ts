import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import type { CallProgress } from '../adapters/postgres/dial-records.js';
import type { CallProgressPayload } from '../domain/webhooks.js';
import { queueWebhook } from './webhooks.js';

const EVENT_OF: Record<CallProgress['kind'], CallProgressPayload['event']> = {
  started: 'call.started',
  answered: 'call.answered',
};

/**
 * Queues call.started and call.answered for calls whose dial record just recorded that step,
 * inside the transaction that records it (the dial records call this as their subscriber), so an
 * event is written if and only if its step is. Where they go: the batch's onCallEvent, or a
 * single call's statusCallBackUrl when its statusCallBackEvents ask for the event. A call sent
 * again after a carrier refused it for capacity gets no second call.started.
 */
export async function queueCallProgress(trx: Db, changes: CallProgress[]): Promise<void> {
  for (const kind of ['started', 'answered'] as const) {
    const of = changes.filter((change) => change.kind === kind);
    if (of.length === 0) continue;
    const event = EVENT_OF[kind];
    const at = new Map(of.map((change) => [change.callId, change.at]));
    // Most campaigns ask for none of these: the filter keeps their sends at one cheap read.
    const rows = (
      await sql<{
        id: string;
        user_id: string;
        agent_id: string;
        contact_id: string;
        batch_id: string | null;
        phone_number: string;
        created_at: Date;
        contact_name: string;
        url: string;
      }>`
        select c.id, c.user_id, c.agent_id, c.contact_id, c.batch_id, c.phone_number, c.created_at,
               ct.name as contact_name,
               case when c.batch_id is not null then b.webhooks->>'onCallEvent' else c.status_callback_url end as url
        from calls c
        join contacts ct on ct.id = c.contact_id
        left join batches b on b.id = c.batch_id
        where c.id = any(${[...at.keys()]}::text[])
          and case when c.batch_id is not null then b.webhooks->>'onCallEvent' is not null
                   else c.status_callback_url is not null
                        and coalesce(c.status_callback_events, '["call.completed"]'::jsonb) ? ${event} end
          and not exists (select 1 from webhook_deliveries w where w.call_id = c.id and w.event = ${event})`.execute(
        trx,
      )
    ).rows;
    for (const row of rows) {
      const when = at.get(row.id) ?? row.created_at;
      await queueWebhook(trx, {
        userId: row.user_id,
        url: row.url,
        payload: {
          event,
          timestamp: when.toISOString(),
          call: {
            id: row.id,
            contactId: row.contact_id,
            agentId: row.agent_id,
            batchId: row.batch_id,
            phoneNumber: row.phone_number,
            contactName: row.contact_name,
            startTime: row.created_at.toISOString(),
            answeredAt: kind === 'answered' ? when.toISOString() : null,
          },
        },
        batchId: row.batch_id,
        callId: row.id,
        now: when,
      });
    }
  }
}
