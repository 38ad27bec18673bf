import type {
  CallEndedEvent,
  DialRecord,
  DialRecords,
  DialRequest,
  ProviderCallState,
  Recording,
  RecordingStore,
  VoiceProvider,
} from '../../../ports.js';
import { settleFromRecord } from './settle.js';

/**
 * The SIP side of a process that holds no SIP or RTP stack (`outdial api`): a single call through
 * a trunk is not placed here but handed to the workers. Its waiting record, written with the call
 * in the dial intent's transaction, is given to `HAND_OFF_OWNER`; a worker adopts it (at most one
 * does) and places the call under the same id (`Reconciler.takeHandOffs`). Everything else a SIP
 * call needs of its provider here is read from the shared record or this host's recordings, as
 * the SIP provider would.
 */
export class SipHandOff implements VoiceProvider {
  readonly name = 'sip';

  constructor(
    private readonly options: {
      records: DialRecords;
      /** The SIP recordings on this host's disk (those of calls this host placed before). */
      recordings: RecordingStore;
    },
  ) {}

  nameFor(): string {
    return this.name;
  }

  /** Gives the call to the workers. A record that is not this process's waiting one stays as it is. */
  async dial(request: DialRequest): Promise<void> {
    await this.options.records.handOff(request.callId);
  }

  /** No call is ever up here: none ends here either. */
  onCallEnded(_handler: (event: CallEndedEvent) => Promise<void>): void {}

  async lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState> {
    return settleFromRecord(request.callId, record);
  }

  recording(call: { id: string }): Promise<Recording | null> {
    return this.options.recordings.get(call.id);
  }

  async close(): Promise<void> {}
}
