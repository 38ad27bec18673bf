import type { TranscriptEntry } from '../../domain/call.js';
import type {
  CallEndedEvent,
  DialAgent,
  DialRecord,
  DialRequest,
  ProviderCallState,
  Recording,
  VoiceProvider,
} from '../../ports.js';

/**
 * Sends each call where its agent says: through the SIP provider when the agent names a trunk,
 * to the default provider (OUTDIAL_VOICE_PROVIDER, the simulator) otherwise.
 */
export class RoutingVoiceProvider implements VoiceProvider {
  readonly name: string;

  constructor(
    private readonly fallback: VoiceProvider,
    private readonly sip: VoiceProvider,
  ) {
    this.name = fallback.name;
  }

  private route(request: DialRequest): VoiceProvider {
    return this.nameFor(request.agent) === this.sip.name ? this.sip : this.fallback;
  }

  nameFor(agent: DialAgent): string {
    return (agent.sipTrunkId ? this.sip : this.fallback).name;
  }

  dial(request: DialRequest): Promise<void> {
    return this.route(request).dial(request);
  }

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.fallback.onCallEnded(handler);
    this.sip.onCallEnded(handler);
  }

  /** Asked of the provider recorded on the call: the agent's trunk may have changed since. */
  lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState> {
    const recorded = request.provider;
    const provider = recorded ? (recorded === this.sip.name ? this.sip : this.fallback) : this.route(request);
    return provider.lookup(request, record);
  }

  recording(call: {
    id: string;
    duration: number;
    transcription: TranscriptEntry[];
    provider?: string;
  }): Promise<Recording | null> {
    return (call.provider === this.sip.name ? this.sip : this.fallback).recording(call);
  }

  async close(): Promise<void> {
    await Promise.all([this.sip.close(), this.fallback.close()]);
  }
}
