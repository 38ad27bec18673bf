import fs from 'node:fs';
import path from 'node:path';
import type { TranscriptEntry } from '../../domain/call.js';
import type {
  CallEndedEvent,
  Clock,
  DialRecord,
  DialRecords,
  DialRequest,
  ProviderCallState,
  Recording,
  VoiceProvider,
} from '../../ports.js';
import { systemClock } from '../../ports.js';
import { publishOnce } from './publish-once.js';
import { conversation, simulatedOutcome, VOICEMAIL_TRANSCRIPT } from './simulator-script.js';
import { synthesizeConversationWav } from './wav.js';

export interface SimulatorOptions {
  ringMs: number;
  talkMs: number;
  /**
   * The shared dial records: a dial goes out only when its record turns sent (so a call id is
   * dialed at most once across processes and hosts), and that moment is the call's start time.
   */
  records?: DialRecords;
  /**
   * A folder where each dial the network took leaves one file named by its call id: the simulated
   * network's own log, for tests and accounting (`readRecord`), written when a record turns sent
   * and again (once only) by a process that rebuilds a gone owner's call. It decides nothing.
   */
  dialsDir?: string;
  clock?: Clock;
  onError?: (error: unknown, event: CallEndedEvent) => void;
}

interface Plan {
  /** Milliseconds from the dial until the call ends. */
  totalMs: number;
  ended: (dialedAt: Date) => CallEndedEvent;
}

const MAX_RECORDED_DIALS = 100_000;

export interface SimulatedDial {
  callId: string;
  to: string;
  attempt: number;
  at: Date;
}

/**
 * Simulated telephony. A call's outcome is a pure function of the number and the attempt, and its
 * timing of the dial time, so after its process dies `lookup` rebuilds any call from its dial
 * record: a call whose time is up ends at once, one still running is picked up again.
 */
export class SimulatedVoiceProvider implements VoiceProvider {
  readonly name = 'simulator';
  /** The most recent dials this process made, oldest first (at most 100,000): tests and accounting read it. */
  readonly dials: SimulatedDial[] = [];
  private readonly sessions = new Map<string, NodeJS.Timeout>();
  /** Ids already dialed (bounded like `dials`): the idempotency record. */
  private readonly dialed = new Set<string>();
  private handler: ((event: CallEndedEvent) => Promise<void>) | null = null;
  private readonly clock: Clock;

  constructor(private readonly options: SimulatorOptions) {
    this.clock = options.clock ?? systemClock;
  }

  nameFor(): string {
    return this.name;
  }

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.handler = handler;
  }

  async dial(request: DialRequest): Promise<void> {
    if (this.dialed.has(request.callId)) return;
    // A start admitted by the shared start log is taken at that moment (within its reply's delay).
    const at = request.startAt ?? this.clock.now();
    // Taken before the record is asked, so a second dial of this id in this process waits for nothing.
    this.dialed.add(request.callId);
    try {
      if (this.options.records && !(await this.options.records.send(request.callId, this.name, at))) return;
    } catch (error) {
      this.dialed.delete(request.callId);
      throw error;
    }
    if (this.options.dialsDir) this.log(request, at);
    this.dials.push({ callId: request.callId, to: request.to, attempt: request.attempt, at });
    if (this.dials.length > MAX_RECORDED_DIALS) {
      const dropped = this.dials.splice(0, this.dials.length - MAX_RECORDED_DIALS);
      for (const dial of dropped) this.dialed.delete(dial.callId);
    }
    this.schedule(request, at);
  }

  /**
   * A call whose owner is gone: its end when its time is up, rebuilt from the time it went out;
   * otherwise this process takes it over (one process does) and reports its end when it comes.
   */
  async lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState> {
    if (this.sessions.has(request.callId)) return { known: true, ended: null };
    const dialedAt = record.sentAt;
    if (!dialedAt) return { known: false, ended: null };
    // The simulated network is its records: a call sent is one it took, even when the process
    // that sent it died before writing the log line (the line is published once, whoever does).
    if (this.options.dialsDir) this.log(request, dialedAt);
    const plan = this.plan(request);
    if (dialedAt.getTime() + plan.totalMs <= this.clock.now().getTime()) {
      return { known: true, ended: plan.ended(dialedAt) };
    }
    const records = this.options.records;
    if (records && record.owner !== records.owner && !(await records.adopt(request.callId, record.owner)))
      return { known: true, ended: null }; // another process took it over first
    this.schedule(request, dialedAt);
    return { known: true, ended: null };
  }

  async recording(call: {
    id: string;
    duration: number;
    transcription: TranscriptEntry[];
  }): Promise<Recording | null> {
    if (call.duration <= 0) return null;
    return { contentType: 'audio/wav', body: synthesizeConversationWav(call.transcription, call.duration) };
  }

  async close(): Promise<void> {
    for (const timer of this.sessions.values()) clearTimeout(timer);
    this.sessions.clear();
  }

  /** Every dial in the dials folder (all processes), oldest first. */
  static readRecord(dialsDir: string): SimulatedDial[] {
    if (!fs.existsSync(dialsDir)) return [];
    return fs
      .readdirSync(dialsDir)
      .filter((file) => file.endsWith('.json'))
      .map((file) => {
        const raw = JSON.parse(fs.readFileSync(path.join(dialsDir, file), 'utf8')) as Omit<
          SimulatedDial,
          'at'
        > & { at: string };
        return { ...raw, at: new Date(raw.at) };
      })
      .sort((a, b) => a.at.getTime() - b.at.getTime());
  }

  /** Adds the dial to the network's log (a file per call id, published whole). */
  private log(request: DialRequest, at: Date): void {
    const line: SimulatedDial = { callId: request.callId, to: request.to, attempt: request.attempt, at };
    publishOnce(this.options.dialsDir as string, `${request.callId}.json`, JSON.stringify(line));
  }

  /** Calls currently ringing or talking in this process. */
  get activeCalls(): number {
    return this.sessions.size;
  }

  private schedule(request: DialRequest, dialedAt: Date): void {
    const plan = this.plan(request);
    const wait = Math.max(dialedAt.getTime() + plan.totalMs - this.clock.now().getTime(), 0);
    const timer = setTimeout(() => {
      this.sessions.delete(request.callId);
      const event = plan.ended(dialedAt);
      this.handler?.(event).catch((error: unknown) => this.options.onError?.(error, event));
    }, wait);
    this.sessions.set(request.callId, timer);
  }

  private plan(request: DialRequest): Plan {
    const { ringMs, talkMs } = this.options;
    const names = {
      agentName: request.agent.agentName ?? request.agent.name,
      contactName: request.contact.name,
    };
    const outcome = simulatedOutcome(request.to, request.attempt);
    const at = (dialedAt: Date, ms: number) => new Date(dialedAt.getTime() + ms);
    switch (outcome.kind) {
      case 'unanswered':
        return {
          totalMs: ringMs,
          ended: (dialedAt) => ({
            callId: request.callId,
            status: outcome.status,
            duration: 0,
            answeredAt: null,
            endedAt: at(dialedAt, ringMs),
            error: outcome.error,
            transcription: [],
          }),
        };
      case 'voicemail': {
        // The machine's greeting is detected in a fraction of a normal conversation.
        const machineMs = Math.round(talkMs / 4);
        return {
          totalMs: ringMs + machineMs,
          ended: (dialedAt) => ({
            callId: request.callId,
            status: 'VOICEMAIL',
            duration: Math.max(Math.ceil(machineMs / 1000), 1),
            answeredAt: at(dialedAt, ringMs),
            endedAt: at(dialedAt, ringMs + machineMs),
            error: null,
            transcription: VOICEMAIL_TRANSCRIPT(names),
          }),
        };
      }
      case 'conversation':
        return {
          totalMs: ringMs + talkMs,
          ended: (dialedAt) => ({
            callId: request.callId,
            status: 'COMPLETED',
            duration: Math.max(Math.ceil(talkMs / 1000), 1),
            answeredAt: at(dialedAt, ringMs),
            endedAt: at(dialedAt, ringMs + talkMs),
            error: null,
            transcription: conversation(outcome.script, names),
          }),
        };
      default: {
        const unreachable: never = outcome;
        return unreachable;
      }
    }
  }
}
