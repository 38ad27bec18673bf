import fs from 'node:fs';
import os from 'node:os';
import type { Logger } from 'pino';
import type { EndedReason } from '../../../domain/agent-call.js';
import { billedSeconds } from '../../../domain/billing.js';
import type { FinalCallStatus } from '../../../domain/call.js';
import {
  type CallEndedEvent,
  type Clock,
  type DependencyGate,
  type DialRecord,
  type DialRecords,
  type DialRequest,
  type Leases,
  type LiveCallChannel,
  type LoadGauge,
  type Pace,
  type ProviderCallState,
  type RateLimiter,
  type Recording,
  type RecordingStore,
  type SipTrunk,
  systemClock,
  type TrunkDirectory,
  type VoiceProvider,
} from '../../../ports.js';
import type { ConversationEngine, VoiceModels } from '../../../voice/contracts.js';
import { runAnsweredCall } from '../../../voice/session.js';
import { speechToolsAvailable } from '../../speech/tools.js';
import { CallHost, isOperatorHangup } from '../call-host.js';
import { RtpSession } from '../rtp.js';
import { parseSdpAnswer } from './message.js';
import { settleFromRecord, unanswered } from './settle.js';
import { SipCallTransport } from './transport.js';
import { TrunkGate } from './trunk-gate.js';
import { type SipOutcome, SipUserAgent } from './uac.js';

/**
 * The address to show carriers when none is configured: the bind address itself, or for a
 * wildcard bind this host's first non-internal IPv4 address (loopback when it has none).
 */
export function publicAddressFor(bindAddress: string): string {
  if (bindAddress !== '0.0.0.0') return bindAddress;
  for (const addresses of Object.values(os.networkInterfaces())) {
    const found = addresses?.find((address) => address.family === 'IPv4' && !address.internal);
    if (found) return found.address;
  }
  return '127.0.0.1';
}

/** The call did not go out: the provider stopped first, or its record is not this process's to send. */
class NotSent extends Error {
  constructor() {
    super('stopped before the call was placed');
  }
}

export type { SipTrunk };

export interface SipProviderOptions {
  /** The address the far end sees in Via, Contact and SDP. */
  publicAddress: string;
  /** The local address the SIP and RTP sockets bind. */
  bindAddress: string;
  /** The local SIP port (UDP); 0 takes any free port. */
  sipPort: number;
  /** Even RTP ports to use, inclusive. */
  rtpPorts: [number, number];
  /** Where recordings are kept (local disk by default); the recording pruner keeps their retention. */
  recordings: RecordingStore;
  /** The shared dial records: what decides whether a call went out, and how it ended. */
  records: DialRecords;
  ringTimeoutMs: number;
  /** A call is hung up when it has been up this long (an agent's maxDurationSeconds is capped by it). */
  maxCallMs: number;
  /** Answering-machine detection on the first seconds of an answered call. */
  amd: boolean;
  /** Audio heard without a decision after which the other side is taken for a person. */
  amdMaxMs?: number;
  /** INVITEs answered with a capacity code before the call is given up as FAILED. */
  capacityRetries?: number;
  /** The trunks calls go through. */
  trunks: TrunkDirectory;
  /** The clock call moments (sent, answered, ended) are read from. */
  clock?: Clock;
  engine: ConversationEngine;
  /** The model ports answered calls are given (hosted, local, or the offline fallbacks). */
  models: VoiceModels;
  /**
   * The start log (Redis with several processes, memory on one): right before each INVITE the
   * call is admitted against its trunk's maxCallsPerSecond and its batch's pace, so the moments
   * calls go out keep both rates whatever held them before (a full trunk, a back-off).
   */
  limiter: RateLimiter;
  /**
   * With several processes (Redis): the trunk's maxConcurrentCalls held across all of them, as
   * shared places. Without it, each process holds the cap on its own calls.
   */
  leases?: Leases;
  /** Live call control: answered calls' events and operators' commands (see session.ts). */
  live?: LiveCallChannel;
  /** This process's load: each answered call is an AI call (see session.ts). */
  load?: LoadGauge;
  /** The engine's models' breakers: an answered call whose model is known down ends at once (see session.ts). */
  dependencies?: DependencyGate;
  logger?: Logger;
  /** Every final answer to an INVITE (the metrics count them). */
  onFinalResponse?(trunkId: string, code: number): void;
  /** Trunk load changed (the metrics show it). */
  onTrunkLoad?(trunkId: string, up: number, waiting: number): void;
}

type Attempt = { kind: 'capacity'; code: number } | { kind: 'final'; event: CallEndedEvent };

/**
 * A shared trunk place is leased for this long and renewed every third of it while the call is
 * up: a worker that dies gives its places back within 6 s (it was 30 s, which kept a trunk full
 * of dead calls). Renewing 200 calls every 2 s costs Redis 100 small writes a second.
 */
export const TRUNK_PLACE_LEASE_MS = 6_000;
/** How often a call waiting for a shared trunk place (or an unreachable start log) asks again. */
const SHARED_POLL_MS = 100;
/** The window a trunk's maxCallsPerSecond is counted in. */
const TRUNK_WINDOW_MS = 1000;
/** How long a stop waits for calls to hang up and report their ends. */
const CLOSE_WAIT_MS = 5000;

const OUTCOME_STATUS: Record<Exclude<SipOutcome['kind'], 'answered' | 'capacity'>, FinalCallStatus> = {
  busy: 'BUSY',
  no_answer: 'NO_ANSWER',
  failed: 'FAILED',
  rejected: 'FAILED',
  unreachable: 'FAILED',
};

/** The end reasons of the INVITE outcomes that are the service's failures (domain/failure.ts). */
const OURS: Partial<Record<SipOutcome['kind'], { endedReason: EndedReason }>> = {
  rejected: { endedReason: 'trunk-rejected' },
  unreachable: { endedReason: 'trunk-unreachable' },
};

/**
 * A call an operator hung up before an answer (CANCELled while it rang, or never placed): no
 * answer, nothing charged, `operator-ended`; the contact's side as any unanswered call.
 */
function cancelledByOperator(callId: string, sipCode: number | null, endedAt: Date): CallEndedEvent {
  return {
    ...unanswered(callId, 'NO_ANSWER', 'Cancelled by the operator before an answer', sipCode, endedAt),
    endedReason: 'operator-ended',
  };
}

/**
 * Real calls through the SIP trunk an agent names: the INVITE through the trunk's gate (its rate
 * and concurrency caps), RTP audio both ways with a recording, and the answered call handed to
 * the answered-call session (src/voice/session.ts) over a SIP transport. Each dial holds its shared record (waiting) before the trunk, and
 * turns it sent right before the INVITE: a call id reaches the network at most once, across
 * processes, hosts and restarts, and the record keeps its answer and its end.
 */
export class SipVoiceProvider implements VoiceProvider {
  readonly name = 'sip';
  private userAgent: Promise<SipUserAgent> | null = null;
  private readonly gates = new Map<string, TrunkGate>();
  private readonly host: CallHost;
  private closed: Promise<void> | null = null;

  constructor(private readonly options: SipProviderOptions) {
    this.host = new CallHost({
      label: 'SIP',
      records: options.records,
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.live ? { live: options.live } : {}),
      closeWaitMs: CLOSE_WAIT_MS,
    });
  }

  private now(): Date {
    return (this.options.clock ?? systemClock).now();
  }

  nameFor(): string {
    return this.name;
  }

  /** Every answered SIP call is held by the conversation engine here. */
  holdsConversations(): boolean {
    return true;
  }

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.host.onCallEnded(handler);
  }

  /** Calls up or waiting in this process. */
  get activeCalls(): number {
    return this.host.size;
  }

  async dial(request: DialRequest): Promise<void> {
    if (this.closed) throw new Error('the SIP provider is closing');
    const trunkId = request.agent.sipTrunkId;
    if (!trunkId) throw new Error(`agent ${request.agent.id} has no SIP trunk`);
    // Taken before the record is asked, so a second dial of this id in this process stops here.
    const stop = this.host.take(request.callId);
    if (!stop) return;
    try {
      if (!(await this.options.records.hold(request.callId, this.name))) {
        this.host.release(request.callId);
        return; // sent or ended before, by this process or another: never twice
      }
    } catch (error) {
      this.host.release(request.callId);
      throw error;
    }
    this.host.running(request.callId, this.run(request, trunkId, stop.signal));
  }

  /**
   * A call whose owner is gone, settled from its record as a carrier would: its reported end; or,
   * cut off, FAILED with the answer time kept and the connected time up to the owner's last
   * heartbeat (charged like any connected time), or unanswered with nothing charged.
   */
  async lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState> {
    if (this.host.holds(request.callId)) return { known: true, ended: null };
    return settleFromRecord(request.callId, record);
  }

  recording(call: { id: string }): Promise<Recording | null> {
    return this.options.recordings.get(call.id);
  }

  /** Hangs up (or cancels) every call of this process and reports their ends; once. */
  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  private async shutdown(): Promise<void> {
    for (const gate of this.gates.values()) gate.close();
    await this.host.stopAll();
    if (this.userAgent) await (await this.userAgent.catch(() => null))?.close();
  }

  private async run(request: DialRequest, trunkId: string, signal: AbortSignal): Promise<void> {
    let ended: CallEndedEvent;
    try {
      ended = await this.place(request, trunkId, signal);
    } catch (error) {
      if (error instanceof NotSent && isOperatorHangup(signal)) {
        // An operator hung up a call still waiting for its trunk: it ends here, never placed.
        await this.host.report(cancelledByOperator(request.callId, null, this.now()));
        return;
      }
      if (error instanceof NotSent) {
        // Nothing reached the carrier: the record stays waiting, and once this process's lease
        // is given back (a stop) or gone (a crash) the call goes back to the queue uncharged.
        this.host.release(request.callId);
        return;
      }
      this.options.logger?.error({ err: error, callId: request.callId }, 'a SIP call failed');
      ended = unanswered(
        request.callId,
        'FAILED',
        `The call could not be placed: ${(error as Error).message}`,
        null,
        this.now(),
        { endedReason: 'error' },
      );
    }
    await this.host.report(ended);
  }

  /** Waits for the trunk, sends the INVITE, and tries again later when the carrier is full. */
  private async place(request: DialRequest, trunkId: string, signal: AbortSignal): Promise<CallEndedEvent> {
    const trunk = await this.options.trunks.forDialing(trunkId);
    if (!trunk) throw new Error(`SIP trunk ${trunkId} does not exist`);
    const gate = this.gate(trunk);
    const retries = this.options.capacityRetries ?? 5;
    for (let tries = 1; ; tries++) {
      this.reportLoad(trunk.id, gate);
      try {
        await gate.acquire(signal);
      } catch {
        throw new NotSent(); // stopped while waiting for the trunk: nothing reached the carrier
      }
      this.reportLoad(trunk.id, gate);
      let result: Attempt;
      let renew: NodeJS.Timeout | undefined;
      try {
        if (this.options.leases)
          renew = await this.holdPlace(this.options.leases, trunk, request.callId, signal);
        result = await this.attempt(request, trunk, signal);
      } finally {
        clearInterval(renew);
        if (this.options.leases && trunk.maxConcurrentCalls !== null) {
          await this.options.leases
            .release(`trunk:${trunk.id}:calls`, request.callId)
            .catch((error: unknown) =>
              this.options.logger?.warn(
                { err: error, callId: request.callId },
                'could not give back a trunk place',
              ),
            );
        }
        gate.release();
        this.reportLoad(trunk.id, gate);
      }
      if (result.kind === 'final') {
        gate.accepted();
        return result.event;
      }
      gate.capacity();
      // Refused: nothing was placed, so until the next INVITE the call is waiting again.
      await this.options.records.refused(request.callId);
      this.options.logger?.warn(
        { callId: request.callId, trunkId, code: result.code, tries },
        'the carrier is full; the call waits and the trunk slows down',
      );
      if (signal.aborted) throw new NotSent(); // only refusals so far: it can be placed again later
      if (tries > retries) {
        return unanswered(
          request.callId,
          'FAILED',
          `The carrier had no capacity (SIP ${result.code}) after ${tries} tries`,
          result.code,
          this.now(),
          { endedReason: 'trunk-rejected' },
        );
      }
    }
  }

  /**
   * Waits for a place on the trunk shared by every process (renewed while the call is up; the
   * returned timer renews it). Redis errors are waited out.
   */
  private async holdPlace(
    leases: Leases,
    trunk: SipTrunk,
    callId: string,
    signal: AbortSignal,
  ): Promise<NodeJS.Timeout | undefined> {
    if (trunk.maxConcurrentCalls === null) return undefined;
    const places = `trunk:${trunk.id}:calls`;
    const limit = trunk.maxConcurrentCalls;
    const retrying = (error: unknown) => {
      this.options.logger?.warn({ err: error, callId }, 'shared trunk places unavailable; waiting');
      return false;
    };
    while (!(await leases.acquire(places, limit, callId, TRUNK_PLACE_LEASE_MS).catch(retrying)))
      await this.pause(SHARED_POLL_MS, signal);
    const timer = setInterval(() => {
      leases.acquire(places, limit, callId, TRUNK_PLACE_LEASE_MS).catch(retrying);
    }, TRUNK_PLACE_LEASE_MS / 3);
    timer.unref();
    return timer;
  }

  /**
   * The last wait before the INVITE: the call is admitted in the start log against its trunk's
   * rate, then its batch's pace (the same key and call id the dispatcher admitted it with, so its
   * entry moves rather than counting twice). A wait at a later check makes the earlier admission
   * stale, so the checks run again until one pass admits them all at once. Returns the call's
   * start: the batch's admitted moment (its recorded starts keep the pace however many calls a
   * full trunk releases together), or now for a single call. Limiter errors are waited out.
   */
  private async admitStart(request: DialRequest, trunk: SipTrunk, signal: AbortSignal): Promise<Date> {
    const checks: Pace[] = [];
    if (trunk.maxCallsPerSecond !== null)
      checks.push({
        key: `trunk:${trunk.id}`,
        perSecond: trunk.maxCallsPerSecond,
        windowMs: TRUNK_WINDOW_MS,
      });
    if (request.pace) checks.push(request.pace);
    for (;;) {
      let stale = false;
      let last: Date | null = null;
      for (const [index, check] of checks.entries()) {
        for (;;) {
          const admission = await this.options.limiter
            .admit(check.key, check.perSecond, check.windowMs, request.callId)
            .catch((error: unknown) => {
              this.options.logger?.warn(
                { err: error, callId: request.callId },
                'start log unavailable; waiting',
              );
              return { waitMs: SHARED_POLL_MS, at: null };
            });
          if (admission.at !== null) {
            last = admission.at;
            break;
          }
          stale ||= index > 0;
          await this.pause(admission.waitMs, signal);
        }
      }
      if (!stale) return request.pace && last ? last : this.now();
    }
  }

  /** Waits `ms`; a stop before or during it means the call is not sent. */
  private async pause(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw new NotSent();
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (signal.aborted) throw new NotSent();
  }

  /** One INVITE, and the whole call when it is answered. */
  private async attempt(request: DialRequest, trunk: SipTrunk, signal: AbortSignal): Promise<Attempt> {
    const ua = await this.agent();
    const recordPath = await this.options.recordings.scratchPath(request.callId);
    const rtp = await RtpSession.open({
      bindAddress: this.options.bindAddress,
      portRange: this.options.rtpPorts,
      recordPath,
      maxRecordSeconds: Math.ceil(this.options.maxCallMs / 1000),
    });
    let handed = false;
    try {
      // The last step before the network: from here the call counts as placed, and the admitted
      // moment is its recorded start. A record that is no longer ours to send never goes out.
      const sentAt = await this.admitStart(request, trunk, signal);
      if (!(await this.options.records.send(request.callId, this.name, sentAt, request.progressEvents)))
        throw new NotSent();
      const sip = ua.invite({
        host: trunk.host,
        port: trunk.port,
        to: request.to,
        from: trunk.fromNumber,
        ringTimeoutMs: this.options.ringTimeoutMs,
        rtpPort: rtp.port,
        reference: request.callId,
        ...(trunk.username && trunk.password
          ? { credentials: { username: trunk.username, password: trunk.password } }
          : {}),
      });
      const giveUp = () => sip.cancel();
      signal.addEventListener('abort', giveUp, { once: true });
      const outcome = await sip.outcome;
      signal.removeEventListener('abort', giveUp);
      const code = sip.finalCode;
      if (code !== null) this.options.onFinalResponse?.(trunk.id, code);
      if (outcome.kind !== 'answered' && isOperatorHangup(signal))
        return { kind: 'final', event: cancelledByOperator(request.callId, code, this.now()) };
      if (outcome.kind === 'capacity') return { kind: 'capacity', code: outcome.code };
      if (outcome.kind !== 'answered') {
        const error =
          outcome.kind === 'busy'
            ? null
            : `${outcome.reason}${'code' in outcome && outcome.code ? ` (SIP ${outcome.code})` : ''}`;
        return {
          kind: 'final',
          event: unanswered(
            request.callId,
            OUTCOME_STATUS[outcome.kind],
            error,
            code,
            this.now(),
            OURS[outcome.kind],
          ),
        };
      }

      const answeredAt = this.now();
      // Kept with the record: a crash from here on still charges the time connected.
      void this.options.records
        .answered(request.callId, answeredAt, request.progressEvents)
        .catch((failure: unknown) =>
          this.options.logger?.warn({ err: failure, callId: request.callId }, 'could not record an answer'),
        );
      const media = parseSdpAnswer(sip.answerSdp);
      let transport: SipCallTransport | null = null;
      let unusable = 'the far end answered without an audio stream we can speak (PCMU or PCMA)';
      try {
        if (media)
          transport = new SipCallTransport({
            sip,
            rtp,
            media,
            trunkHost: trunk.host,
            recordPath,
            callId: request.callId,
            ...(this.options.logger ? { logger: this.options.logger } : {}),
          });
      } catch (failure) {
        unusable = `its media could not be used: ${(failure as Error).message}`;
      }
      let ended: Omit<CallEndedEvent, 'duration' | 'endedAt'>;
      if (!transport) {
        // Answered, but nothing we can speak: hung up at once, charged like any answered time.
        await sip.hangup();
        ended = {
          callId: request.callId,
          status: 'FAILED',
          answeredAt,
          error: `The call failed after it was answered: ${unusable}`,
          transcription: [],
          sipCode: code,
          endedReason: 'error',
        };
      } else {
        handed = true;
        const outcome = await runAnsweredCall({
          callId: request.callId,
          transport,
          agent: request.agent,
          contact: request.contact,
          variables: request.variables ?? {},
          engine: this.options.engine,
          models: this.options.models,
          amd: this.options.amd,
          ...(this.options.amdMaxMs !== undefined ? { amdMaxMs: this.options.amdMaxMs } : {}),
          maxCallMs: this.options.maxCallMs,
          recordings: this.options.recordings,
          // A stop of this process hangs the call up as the agent would.
          stop: signal,
          ...(this.options.live ? { live: this.options.live } : {}),
          ...(this.options.load ? { load: this.options.load } : {}),
          ...(this.options.dependencies ? { dependencies: this.options.dependencies } : {}),
          ...(this.options.logger ? { logger: this.options.logger } : {}),
        });
        ended = { callId: request.callId, answeredAt, sipCode: code, ...outcome };
      }
      const endedAt = this.now();
      return {
        kind: 'final',
        event: {
          ...ended,
          duration: billedSeconds(answeredAt, endedAt),
          endedAt,
        },
      };
    } finally {
      if (!handed) {
        // The session keeps (or removes) the recording of an answered call; any other attempt
        // leaves nothing behind.
        await rtp.close();
        await fs.promises.rm(recordPath, { force: true });
      }
    }
  }

  private gate(trunk: SipTrunk): TrunkGate {
    const limits = {
      maxCallsPerSecond: trunk.maxCallsPerSecond,
      maxConcurrentCalls: trunk.maxConcurrentCalls,
    };
    let gate = this.gates.get(trunk.id);
    if (gate) gate.setLimits(limits);
    else {
      gate = new TrunkGate(limits);
      this.gates.set(trunk.id, gate);
    }
    return gate;
  }

  private reportLoad(trunkId: string, gate: TrunkGate): void {
    this.options.onTrunkLoad?.(trunkId, gate.inUse, gate.waiting);
  }

  private agent(): Promise<SipUserAgent> {
    this.userAgent ??= (async () => {
      const ua = new SipUserAgent(this.options.publicAddress, this.options.bindAddress);
      await ua.start(this.options.sipPort);
      this.options.logger?.info(
        { port: ua.port, address: this.options.publicAddress },
        'SIP user agent listening',
      );
      if (this.options.engine.name === 'scripted') {
        const tools = speechToolsAvailable();
        if (tools.missing.length > 0) {
          this.options.logger?.warn(
            { missing: tools.missing },
            'the scripted conversation engine needs espeak-ng, pocketsphinx and pocketsphinx-en-us: answered calls will fail until they are installed',
          );
        }
      }
      return ua;
    })();
    // A failed start (the port is taken) is tried again at the next call, not cached.
    this.userAgent.catch(() => {
      this.userAgent = null;
    });
    return this.userAgent;
  }
}
