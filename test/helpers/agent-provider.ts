import type { EndedReason, ToolCallRecord, TurnMetrics } from '../../src/domain/agent-call.js';
import type { CallEndedEvent, DialRequest, VoiceProvider } from '../../src/ports.js';

/** What an AI call's end carries besides the simulator's report. */
export interface AgentEnd {
  endedReason: EndedReason | null;
  turns: TurnMetrics[];
  toolCalls: ToolCallRecord[];
}

/**
 * The simulator as the telephony, with the agent side an AI session adds to a call's end report
 * (endedReason, turns, tool calls): what the service must record and show, whatever engine ran.
 * It also keeps every DialRequest it was handed, so tests see the {{variables}} a call got.
 */
export class AgentEndProvider implements VoiceProvider {
  readonly requests: DialRequest[] = [];

  constructor(
    private readonly inner: VoiceProvider,
    /** The agent side of an answered call's end. */
    private readonly agentEnd: (event: CallEndedEvent) => AgentEnd,
  ) {}

  get name(): string {
    return this.inner.name;
  }

  nameFor(agent: DialRequest['agent']): string {
    return this.inner.nameFor(agent);
  }

  dial(request: DialRequest): Promise<void> {
    this.requests.push(request);
    return this.inner.dial(request);
  }

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.inner.onCallEnded((event) =>
      handler(event.answeredAt ? { ...event, ...this.agentEnd(event) } : { ...event, endedReason: null }),
    );
  }

  lookup: VoiceProvider['lookup'] = (request, record) => this.inner.lookup(request, record);
  recording: VoiceProvider['recording'] = (call) => this.inner.recording(call);
  close(): Promise<void> {
    return this.inner.close();
  }

  request(callId: string): DialRequest | undefined {
    return this.requests.find((request) => request.callId === callId);
  }
}
