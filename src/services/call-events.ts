import type { CallProgressPayload } from '../domain/webhooks.js';
import type { CallProgress, Repos } from '../store/index.js';
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
export async function queueCallProgress(repos: Repos, changes: CallProgress[]): Promise<void> {
  for (const kind of ['started', 'answered'] as const) {
    const of = changes.filter((change) => change.kind === kind);
    if (of.length === 0) continue;
    const event = EVENT_OF[kind];
    const at = new Map(of.map((change) => [change.callId, change.at]));
    const rows = await repos.calls.progressTargets([...at.keys()], event);
    for (const row of rows) {
      const when = at.get(row.id) ?? row.created_at;
      await queueWebhook(repos, {
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
