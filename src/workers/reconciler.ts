import type { Logger } from 'pino';
import { dialVariables } from '../domain/agent-call.js';
import { failedDialEnd } from '../domain/call.js';
import { type DialRecord, type DialRequest, HAND_OFF_OWNER, type LoadGauge } from '../ports.js';
import { agentForDial } from '../services/calls/intake.js';
import type { CallLifecycle } from '../services/calls/lifecycle.js';
import type { LiveView } from '../services/calls/live-view.js';
import type { Deps } from '../services/deps.js';
import type { UnsettledCall } from '../store/dials.js';
import { PollLoop } from './loop.js';

/**
 * A call recorded before dial records existed (an upgrade with calls up) is left this long to its
 * old process before it is taken for one that never went out.
 */
const UNRECORDED_GRACE_MS = 60_000;
/**
 * A call sent this long ago by this process (or reported ended by any) and still ONGOING is
 * checked too: its end report may have been lost (the database was down when it came).
 */
const LOST_END_GRACE_MS = 60_000;
/**
 * A call of this process still waiting this long, which its provider does not hold (a dial that
 * failed on a database error, say), is taken up again. A claimed call waits for its slot about a
 * second; a call waiting for its trunk is held by the provider and left alone.
 */
const STUCK_WAITING_MS = 5 * 60_000;

/** Settles the calls whose owner is gone (it died mid-call, or stopped and gave them back). */
export class Reconciler {
  constructor(
    private readonly deps: Pick<Deps, 'store' | 'clock' | 'dials' | 'logger' | 'provider'>,
    private readonly lifecycle: CallLifecycle,
    private readonly live: LiveView,
    /** This process's load: a full or lagging worker leaves handed-off calls to the others. */
    private readonly load?: LoadGauge,
  ) {}

  /**
   * Settles calls still ONGOING whose owner is gone (its lease ran out: it died, or stopped and
   * gave it back). A call whose owner is alive is never touched, however long it runs. From the
   * call's dial record: one that never reached the network goes back to the queue with no
   * attempt charged (a batch contact, as Dispatcher.close does) or is dialed again by this process
   * under its same id (a single call); one that went out is settled by its provider (its reported
   * end, a cut-off, or, for the simulator, a rebuilt outcome or a pickup). `all` takes every other
   * owner for gone: at the start of the embedded service, whose database is this process's alone.
   */
  async reconcileStale(options: { limit?: number; all?: boolean } = {}): Promise<number> {
    const owner = this.deps.dials.owner;
    const all = options.all === true;
    const unrecordedBefore = new Date(this.deps.clock.now().getTime() - (all ? 0 : UNRECORDED_GRACE_MS));
    const lostBefore = new Date(this.deps.clock.now().getTime() - LOST_END_GRACE_MS);
    const stuckBefore = new Date(this.deps.clock.now().getTime() - STUCK_WAITING_MS);
    const rows = await this.deps.store.dials.unsettled({
      owner,
      all,
      unrecordedBefore,
      lostBefore,
      stuckBefore,
      limit: options.limit ?? 200,
    });
    return this.settleAll(rows);
  }

  /**
   * Places the single SIP calls an `outdial api` process handed to the workers (it holds no SIP
   * stack): each is adopted by one worker and dialed under its id, as a gone owner's call would
   * be. The `hand-offs` loop runs this often, so a handed-off call waits a pass, not a sweep.
   */
  async takeHandOffs(limit = 50): Promise<number> {
    return this.settleAll(await this.deps.store.dials.handedOff(limit));
  }

  private async settleAll(rows: UnsettledCall[]): Promise<number> {
    let handled = 0;
    for (const row of rows) {
      try {
        if (await this.settleOrphan(row, requestOf(row), row.record)) handled++;
      } catch (error) {
        // One call that cannot be settled now must not hold up the others behind it.
        this.deps.logger.error({ err: error, callId: row.id }, 'could not settle a call whose owner is gone');
      }
    }
    return handled;
  }

  /** One call of a gone owner: back to the queue, dialed again, or ended; true when it moved. */
  private async settleOrphan(
    call: {
      id: string;
      user_id: string;
      phone_number: string;
      contact_id: string;
      batch_id: string | null;
      batch_seq: number | null;
      created_at: Date;
    },
    request: DialRequest,
    record: DialRecord | null,
  ): Promise<boolean> {
    if (record?.state === 'sent' || record?.state === 'ended') {
      // Up in this process, or picked up now: its end comes when it ends.
      const state = await this.deps.provider.lookup(request, record);
      return state.ended ? this.lifecycle.finish(state.ended) : false;
    }
    if (record && record.state !== 'waiting') return false; // returned: its row is on its way out
    // This process's own: only when its provider does not hold it (not waiting for a trunk).
    if (record?.owner === this.deps.dials.owner && (await this.deps.provider.lookup(request, record)).known)
      return false;
    if (call.batch_id !== null && call.batch_seq !== null) {
      const returned = await this.lifecycle.returnToQueue(
        { callId: call.id, batchId: call.batch_id, seq: call.batch_seq },
        record?.owner ?? null,
      );
      if (returned)
        this.deps.logger.warn({ callId: call.id }, 'a call that never went out went back to the queue');
      return returned;
    }
    // A call an API process handed off is held by the worker that adopts it (issue 24 §7): one
    // past its AI-call bound, or lagging, leaves it waiting for a worker with room.
    const ai = this.deps.provider.holdsConversations?.(request.agent) ?? false;
    if (record?.owner === HAND_OFF_OWNER && ai && this.load && (this.load.lagging || this.load.aiRoom === 0))
      return false;
    // A single call has no queue: this process dials it, under the same id, so at most once.
    if (
      record &&
      record.owner !== this.deps.dials.owner &&
      !(await this.deps.dials.adopt(call.id, record.owner))
    )
      return false;
    if (record?.owner === HAND_OFF_OWNER) {
      // The API process that handed it off announced it a moment ago.
      this.deps.logger.debug({ callId: call.id }, 'a call an API process handed off is dialed here');
    } else {
      this.deps.logger.warn({ callId: call.id }, 'a call that never went out is dialed now');
      await this.live.putNewSingleCall(
        call.id,
        call.user_id,
        { id: call.contact_id, phone_number: call.phone_number },
        call.created_at,
      );
    }
    // Its AI place is taken while it rings, as a single dial's is (CallIntake.dial).
    if (ai) this.load?.reserve(call.id);
    try {
      await this.deps.provider.dial(request);
    } catch (error) {
      // As a single dial the provider refuses: FAILED, never answered, nothing charged.
      this.deps.logger.error({ err: error, callId: call.id }, 'provider refused the dial');
      await this.lifecycle.finish(failedDialEnd(call.id, this.deps.clock.now()));
    }
    return true;
  }
}

/** The dial request of a call to settle, rebuilt from its rows as the intake built it. */
function requestOf(row: UnsettledCall): DialRequest {
  return {
    callId: row.id,
    to: row.phone_number,
    attempt: row.attempt,
    agent: agentForDial({
      id: row.agent_id,
      name: row.agent_name,
      basic_details: row.basic_details,
      sip_trunk_id: row.sip_trunk_id,
    }),
    contact: { id: row.contact_id, name: row.contact_name },
    provider: row.provider,
    variables: dialVariables(
      { name: row.contact_name, phoneNumber: row.phone_number, company: row.contact_company },
      row.contact_metadata,
      row.variables,
    ),
  };
}

/** Finishes calls left ONGOING by a process that died mid-call, from what the provider reports. */
export function createReconciler(reconciler: Reconciler, logger: Logger, idleMs = 5_000): PollLoop {
  return new PollLoop({
    name: 'reconciler',
    idleMs,
    logger,
    tick: async () => {
      const finished = await reconciler.reconcileStale();
      if (finished > 0) logger.info({ finished }, 'reconciled calls left ongoing');
      return finished;
    },
  });
}
