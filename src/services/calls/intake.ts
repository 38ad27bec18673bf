import { dialVariables } from '../../domain/agent-call.js';
import { dialAllowance, MINUTES_RESERVED_PER_CALL, type UserCallLoad } from '../../domain/allowance.js';
import type { ConsentRecord } from '../../domain/batch.js';
import { DIAL_REFUSED_MESSAGE, failedDialEnd } from '../../domain/call.js';
import { consentError } from '../../domain/consent.js';
import { contactChanges } from '../../domain/contacts.js';
import { AppError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { type CallEvent, singleCallWantsProgress } from '../../domain/webhooks.js';
import type { DialRequest, LoadGauge } from '../../ports.js';
import type { Repos } from '../../store/index.js';
import type { Breakers } from '../breakers.js';
import { callLoad } from '../call-load.js';
import type { Deps } from '../deps.js';
import type { DomainEventBus } from '../events.js';
import { defaultCountryOf, phoneOrRefuse } from '../phone-numbers.js';
import { isSuppressed } from '../suppressions.js';
import { assertWebhookUrls } from '../webhooks.js';
import type { CallLifecycle } from './lifecycle.js';

export interface CallerDetails {
  name?: string;
  email?: string;
  company?: string | null;
  metadata?: Record<string, unknown>;
  /** The contact's consent record (issue 15); replaces the stored one when given. */
  consent?: ConsentRecord;
}

export interface DialInput {
  to?: string;
  agentConfigId: string;
  contactId?: string;
  callerDetails?: CallerDetails;
  /** Values for the agent's {{variables}} on this call (stored with it). */
  variables?: Record<string, string>;
  statusCallBackUrl?: string;
  /** The events statusCallBackUrl hears of; default ["call.completed"]. */
  statusCallBackEvents?: CallEvent[];
}

export interface DialResult {
  message: string;
  callId: string;
  contactId: string;
  status: 'ONGOING';
}

/** The user's one contact that stands for the browser on web calls. */
const WEB_CONTACT = { phoneNumber: 'web', name: 'Browser' } as const;

type WebContact = { id: string; name: string; phone_number: string };

/** Calls asked for: a single dial (`POST /api/v1/call/dial`) and a web call from the dashboard. */
export class CallIntake {
  constructor(
    private readonly deps: Pick<
      Deps,
      'store' | 'config' | 'clock' | 'provider' | 'dials' | 'logger' | 'metrics'
    >,
    private readonly lifecycle: CallLifecycle,
    private readonly events: DomainEventBus,
    /** The dependencies' circuit breakers; without them, a dial never waits on one. */
    private readonly breakers?: Pick<Breakers, 'blocking' | 'dependenciesOf'>,
    /** This process's load (voice/load.ts): a full or lagging process refuses AI dials it would hold. */
    private readonly load?: LoadGauge,
  ) {}

  /**
   * No single call into a known outage: when a dependency the call needs (its trunk; the engine's
   * models, when the engine holds its calls here) has an open breaker, 503 DEPENDENCY_UNAVAILABLE
   * naming it, before anything is written.
   */
  private async assertDependenciesUp(agent: DialRequest['agent']): Promise<void> {
    const breakers = this.breakers;
    if (!breakers) return;
    const held = this.deps.provider.holdsConversations?.(agent) ?? false;
    const blocked = await breakers.blocking(breakers.dependenciesOf(agent, held));
    if (!blocked) return;
    throw new AppError(
      'DEPENDENCY_UNAVAILABLE',
      `${blocked.name} is unavailable${blocked.openedAt ? ` since ${blocked.openedAt.toISOString()}` : ''}; the call was not placed. Calls resume once it answers again.`,
      {
        dependency: blocked.key,
        kind: blocked.kind,
        since: blocked.openedAt?.toISOString() ?? null,
        lastError: blocked.lastError,
      },
    );
  }

  /**
   * Starts a single call. The call row (status ONGOING) is committed before the provider is asked:
   * it is the dial intent, and a unique index lets at most one call per contact be ONGOING, so two
   * concurrent dials to one contact resolve to one call and one 409.
   */
  async dial(
    userId: string,
    input: DialInput,
    /** Runs in the transaction that records the dial intent (the Idempotency-Key's record). */
    onCommit?: (repos: Repos, result: DialResult) => Promise<void>,
  ): Promise<DialResult> {
    const { store } = this.deps;
    // Input before limits (issue 25 §8): a bad number or contact is a 400 even for a user at their
    // cap or with a breaker open, and takes no AI place.
    const to = await this.dialNumber(userId, input);
    assertContactInput(input, to, this.deps.clock.now());
    // Read again under the lock below; read here so a wrong contactId is a 404 before any limit.
    if (input.contactId) await namedContact(store, userId, input.contactId, to);
    assertWebhookUrls({ statusCallBackUrl: input.statusCallBackUrl }, this.deps.config.webhookAllowPrivate);
    const agent = await this.activeAgent(userId, input.agentConfigId);
    const dialAgent = agentForDial(agent);
    await this.assertDependenciesUp(dialAgent);
    const callId = newId('call');
    // Issue 24 §7: the process that would hold the conversation takes its place now, or refuses
    // with 503 OVERLOADED before anything is written. The last check before the transaction: a
    // failure from here on gives the place back (the catch below, or the call's end).
    this.takeAiPlace(dialAgent, callId);
    const now = this.deps.clock.now();
    let contactId: string | null = null;
    let contact: Awaited<ReturnType<CallIntake['resolveContact']>>;
    let attempt = 1;
    const providerName = this.deps.provider.nameFor(dialAgent);
    try {
      ({ contact, attempt } = await store.tx(async (repos) => {
        // Credit and concurrency are decided under the user's row lock, in the transaction that
        // records the dial intent, so two dials in any processes never both take the last place.
        assertMayDial(await callLoad(repos, userId, { lock: true }));
        const resolved = await this.resolveContact(repos, userId, input, to);
        // A number on the user's suppression list is never dialed; throwing here rolls back the
        // contact upsert too, so the refusal stores nothing and charges nothing.
        if (await isSuppressed(repos, userId, resolved.phone_number)) {
          throw new AppError(
            'NUMBER_SUPPRESSED',
            `${resolved.phone_number} is on your suppression list; remove it (DELETE /api/v1/suppressions/{phoneNumber}) to call it`,
          );
        }
        contactId = resolved.id;
        const attemptNumber = await this.lifecycle.open(repos, {
          callId,
          userId,
          agentId: agent.id,
          contact: resolved,
          provider: providerName,
          channel: 'phone',
          now,
          answeredAt: null,
          statusCallBackUrl: input.statusCallBackUrl ?? null,
          // Kept only with a URL to send them to; null reads as the default.
          statusCallBackEvents:
            input.statusCallBackUrl && input.statusCallBackEvents ? input.statusCallBackEvents : null,
          variables: input.variables ?? null,
        });
        await onCommit?.(repos, dialResult(callId, resolved.id));
        return { contact: resolved, attempt: attemptNumber };
      }));
    } catch (error) {
      this.load?.release(callId);
      if (!isUniqueViolation(error) || contactId === null) throw error;
      const ongoing = await store.calls.ongoingOfContact(contactId);
      throw new AppError('CALL_IN_PROGRESS', 'A call is already in progress for this contact', {
        callId: ongoing ?? null,
      });
    }

    await this.events.emit('call.opened', { callId, userId, contact, at: now });

    const request: DialRequest = {
      callId,
      to: contact.phone_number,
      attempt,
      agent: dialAgent,
      contact: { id: contact.id, name: contact.name },
      variables: dialVariables(
        { name: contact.name, phoneNumber: contact.phone_number, company: contact.company },
        contact.metadata,
        input.variables,
      ),
      progressEvents: singleCallWantsProgress({
        status_callback_url: input.statusCallBackUrl ?? null,
        status_callback_events: input.statusCallBackEvents ?? null,
      }),
    };
    try {
      await this.deps.provider.dial(request);
      this.deps.metrics.callsDialed.inc({ kind: 'single' });
    } catch (error) {
      this.deps.logger.error({ err: error, callId }, 'provider refused the dial');
      await this.lifecycle.finish(failedDialEnd(callId, this.deps.clock.now()));
      throw new AppError('PROVIDER_ERROR', DIAL_REFUSED_MESSAGE, { callId });
    }
    return dialResult(callId, contact.id);
  }

  /**
   * Opens a call from the dashboard's "Talk to this agent" (channel 'web'): the same checks and
   * the same call row as a dial (one unreserved minute, a free place under maxConcurrentCalls),
   * answered from its first moment. Its dial record is written sent and answered in the same
   * transaction, so no sweep ever takes it for one that never went out and dials it: a web call
   * whose process dies is settled as cut off (WebCallProvider.lookup). The callee is the user's
   * one "Browser" contact, so a user has at most one web call up at a time (409 otherwise).
   */
  async openWebCall(
    userId: string,
    agentId: string,
    provider: string,
  ): Promise<{ request: DialRequest; answeredAt: Date }> {
    const agent = await this.activeAgent(userId, agentId);
    const callId = newId('call');
    const now = this.deps.clock.now();
    let contact: WebContact;
    let attempt: number;
    try {
      ({ contact, attempt } = await this.deps.store.tx(async (repos) => {
        assertMayDial(await callLoad(repos, userId, { lock: true }));
        const browser = await repos.contacts.upsertWebContact(
          userId,
          { id: newId('cnt'), phoneNumber: WEB_CONTACT.phoneNumber, name: WEB_CONTACT.name },
          now,
        );
        const attemptNumber = await this.lifecycle.open(repos, {
          callId,
          userId,
          agentId: agent.id,
          contact: browser,
          provider,
          channel: 'web',
          now,
          answeredAt: now,
          statusCallBackUrl: null,
          statusCallBackEvents: null,
          variables: null,
        });
        return { contact: browser, attempt: attemptNumber };
      }));
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      throw new AppError(
        'CALL_IN_PROGRESS',
        'A web call of yours is already in progress; hang it up (or wait for it to end) first',
      );
    }
    await this.events.emit('call.opened', { callId, userId, contact, at: now });
    this.deps.metrics.callsDialed.inc({ kind: 'web' });
    return {
      request: {
        callId,
        to: contact.phone_number,
        attempt,
        agent: agentForDial(agent),
        contact: { id: contact.id, name: contact.name },
        provider,
        variables: dialVariables(
          { name: contact.name, phoneNumber: contact.phone_number, company: null },
          {},
          {},
        ),
      },
      answeredAt: now,
    };
  }

  /**
   * A single dial of an agent whose conversations the engine holds in this process (the simulator
   * with an LLM, SIP in `serve` and `worker`) takes one of this process's AI places while it rings
   * (`LoadGauge.reserve`), so two quick dials never both see the last one free. A process at its
   * bound (OUTDIAL_MAX_AI_CALLS: answered and ringing AI calls) or lagging refuses it: 503
   * OVERLOADED, since the call could not be served here. Where the call is held elsewhere (a SIP
   * call an `api` process hands to the workers) this process's load says nothing of it: no check.
   */
  private takeAiPlace(agent: DialRequest['agent'], callId: string): void {
    const load = this.load;
    if (!load || !this.deps.provider.holdsConversations?.(agent)) return;
    const refusal = overloadRefusal(load);
    if (refusal) throw refusal;
    load.reserve(callId);
  }

  /** The user's agent, active; AGENT_NOT_FOUND otherwise (someone else's agent is not told apart). */
  private async activeAgent(userId: string, agentId: string) {
    const agent = await this.deps.store.agents.getForUser(userId, agentId);
    if (!agent?.is_active) {
      throw new AppError('AGENT_NOT_FOUND', `Agent ${agentId} does not exist, is inactive or is not yours`);
    }
    return agent;
  }

  /** `to` in E.164, read in the user's default country; undefined when not given, a 400 when bad. */
  private async dialNumber(userId: string, input: DialInput): Promise<string | undefined> {
    if (input.to === undefined) return undefined;
    return phoneOrRefuse(input.to, await defaultCountryOf(this.deps, userId), 'to');
  }

  /** The contact dialed: the one named by contactId, or the one of `to` (normalised), created or merged. */
  private async resolveContact(repos: Repos, userId: string, input: DialInput, to: string | undefined) {
    if (input.contactId) return namedContact(repos, userId, input.contactId, to);
    if (!to) throw new Error('dial without a number: assertContactInput lets none through');
    const details = input.callerDetails ?? {};
    // The contact is created or merged by the one rule batches use too (domain/contacts.ts).
    const [written] = await repos.contacts.merge(userId, [
      { ...contactChanges(details), id: newId('cnt'), phoneNumber: to },
    ]);
    const contact = written && (await repos.contacts.getForUser(userId, written.id));
    if (!contact) throw new Error(`no contact row for ${to}`);
    return contact;
  }
}

/** The contact `contactId` names, when it is the user's and `to` (if given) is its number. */
async function namedContact(repos: Pick<Repos, 'contacts'>, userId: string, contactId: string, to?: string) {
  const contact = await repos.contacts.getForUser(userId, contactId);
  if (!contact) throw new AppError('NOT_FOUND', 'Contact not found');
  if (to && to !== contact.phone_number) {
    throw new AppError('INVALID_REQUEST', "to does not match the contact's phone number", {
      fieldErrors: { to: [`does not match the phone number of contact ${contact.id}`] },
    });
  }
  return contact;
}

/**
 * What a dial's contact input must hold, checked before any limit: `to` when no contactId names the
 * contact, and a consent record that is not from the future.
 */
function assertContactInput(input: DialInput, to: string | undefined, now: Date): void {
  if (input.contactId) return;
  if (!to) {
    throw new AppError('INVALID_REQUEST', 'to is required when contactId is not given', {
      fieldErrors: { to: ['is required when contactId is not given'] },
    });
  }
  const consent = input.callerDetails?.consent;
  const consentProblem = consent ? consentError(consent, now) : null;
  if (consentProblem) {
    const field = `callerDetails.consent.${consentProblem.field}`;
    throw new AppError('INVALID_REQUEST', `${field} ${consentProblem.message}`, {
      fieldErrors: { [field]: [consentProblem.message] },
    });
  }
}

function dialResult(callId: string, contactId: string): DialResult {
  return { message: 'Call initiated successfully', callId, contactId, status: 'ONGOING' };
}

/**
 * A single dial's check: 402 without an unreserved minute, 429 CONCURRENCY_LIMIT at the user's
 * limit of calls in progress. Credit first: waiting for a place does not help a spent balance.
 */
function assertMayDial(load: UserCallLoad | null): void {
  if (!load) throw new AppError('UNAUTHORIZED');
  const allowance = dialAllowance(load);
  if (allowance.unreservedMinutes < MINUTES_RESERVED_PER_CALL) {
    const reserved =
      load.callsInProgress > 0
        ? `, ${allowance.reservedMinutes} of them reserved by ${load.callsInProgress} calls in progress`
        : '';
    throw new AppError(
      'INSUFFICIENT_CREDITS',
      `A call needs ${MINUTES_RESERVED_PER_CALL} unreserved minute; ${load.availableMinutes} available${reserved}`,
      {
        estimatedMinutesRequired: MINUTES_RESERVED_PER_CALL,
        availableMinutes: load.availableMinutes,
        reservedMinutes: allowance.reservedMinutes,
      },
    );
  }
  if (allowance.freePlaces === 0) {
    throw new AppError(
      'CONCURRENCY_LIMIT',
      `${load.callsInProgress} calls are in progress, the most this user may have at once (maxConcurrentCalls ${load.maxConcurrentCalls}); dial again when one ends`,
    );
  }
}

/** The wait a refused AI dial is told before trying again (Retry-After). */
export const OVERLOADED_RETRY_AFTER_SECONDS = 5;

/** 503 OVERLOADED when this process can take on no AI call now (full or lagging); null when it can. */
export function overloadRefusal(load: LoadGauge): AppError | null {
  if (!load.lagging && load.aiRoom > 0) return null;
  const why = load.lagging
    ? 'its event loop is lagging past its bound'
    : `it holds its most AI calls (${load.maxAiCalls}, OUTDIAL_MAX_AI_CALLS)`;
  return new AppError(
    'OVERLOADED',
    `This server cannot take on another AI call now: ${why}; nothing was dialed or charged, try again shortly`,
    { retryAfterSeconds: OVERLOADED_RETRY_AFTER_SECONDS },
  );
}

/** The agent as a dial request carries it, from its row. */
export function agentForDial(agent: {
  id: string;
  name: string;
  basic_details: Record<string, unknown>;
  sip_trunk_id: string | null;
}): DialRequest['agent'] {
  const details = agent.basic_details;
  return {
    id: agent.id,
    name: agent.name,
    agentName: typeof details.agent_name === 'string' ? details.agent_name : null,
    language: typeof details.agentLanguage === 'string' ? details.agentLanguage : null,
    sipTrunkId: agent.sip_trunk_id,
    details,
  };
}

export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}
