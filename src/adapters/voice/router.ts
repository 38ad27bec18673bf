import type { TranscriptEntry } from '../../domain/call.js';
import type {
  CallEndedEvent,
  CallHolder,
  DialAgent,
  DialRecord,
  DialRequest,
  ProviderCallState,
  Recording,
  VoiceProvider,
} from '../../ports.js';

/**
 * Sends each call where its agent says: through the SIP provider when the agent names a trunk,
 * to the default provider (OUTDIAL_VOICE_PROVIDER, the simulator) otherwise. Calls recorded with
 * another provider's name (the web provider's browser calls, which are never dialed) are settled
 * and played back by that provider.
 */
export class RoutingVoiceProvider implements VoiceProvider {
  readonly name: string;

  constructor(
    private readonly fallback: VoiceProvider,
    private readonly sip: VoiceProvider,
    private readonly others: CallHolder[] = [],
  ) {
    this.name = fallback.name;
  }

  /** The holder named on a call row, or null for the default's and SIP's (decided as before). */
  private recorded(name: string | undefined): CallHolder | null {
    return name === undefined ? null : (this.others.find((other) => other.name === name) ?? null);
  }

  private providerFor(agent: DialAgent): VoiceProvider {
    return agent.sipTrunkId ? this.sip : this.fallback;
  }

  nameFor(agent: DialAgent): string {
    return this.providerFor(agent).name;
  }

  holdsConversations(agent: DialAgent): boolean {
    return this.providerFor(agent).holdsConversations?.(agent) ?? false;
  }

  /** A call recorded with a holder that never dials (a web call) is refused: nothing places it. */
  async dial(request: DialRequest): Promise<void> {
    if (this.recorded(request.provider)) {
      throw new Error(`call ${request.callId} is a ${request.provider} call: it is never dialed`);
    }
    return this.providerFor(request.agent).dial(request);
  }

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.fallback.onCallEnded(handler);
    this.sip.onCallEnded(handler);
    for (const other of this.others) other.onCallEnded(handler);
  }

  /** Asked of the provider recorded on the call: the agent's trunk may have changed since. */
  lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState> {
    const recorded = request.provider;
    const provider =
      this.recorded(recorded) ??
      (recorded ? (recorded === this.sip.name ? this.sip : this.fallback) : this.providerFor(request.agent));
    return provider.lookup(request, record);
  }

  recording(call: {
    id: string;
    duration: number;
    transcription: TranscriptEntry[];
    provider?: string;
  }): Promise<Recording | null> {
    const provider =
      this.recorded(call.provider) ?? (call.provider === this.sip.name ? this.sip : this.fallback);
    return provider.recording(call);
  }

  async close(): Promise<void> {
    await Promise.all([
      this.sip.close(),
      this.fallback.close(),
      ...this.others.map((other) => other.close()),
    ]);
  }
}
