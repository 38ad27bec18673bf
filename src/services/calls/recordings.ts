import type { CallStatus } from '../../domain/call.js';
import { AppError } from '../../domain/errors.js';
import type { Recording } from '../../ports.js';
import type { Deps } from '../deps.js';
import type { RecordingLinks } from '../recording-links.js';

/** A call's recording: its audio (from the provider that held the call) and its signed links. */
export class CallRecordings {
  constructor(
    private readonly deps: Pick<Deps, 'store' | 'provider'>,
    private readonly links: RecordingLinks,
  ) {}

  /** Audio of a finished, answered call. `userId` (bearer) or a valid signed token must be given. */
  async recording(callId: string, access: { userId?: string; token?: string }): Promise<Recording> {
    if (!access.userId && (!access.token || !this.verifyRecordingToken(callId, access.token)))
      throw new AppError('NOT_FOUND');
    const row = await this.deps.store.calls.forRecording(callId, access.userId ?? null);
    if (!row || row.status === 'ONGOING' || !row.duration) throw new AppError('NOT_FOUND');
    const recording = await this.deps.provider.recording({
      id: row.id,
      duration: row.duration,
      transcription: row.transcription ?? [],
      provider: row.provider,
    });
    if (!recording) throw new AppError('NOT_FOUND');
    return recording;
  }

  recordingUrl(callId: string, status: CallStatus, duration: number | null): string | null {
    return this.links.url(callId, status, duration);
  }

  /** The signed recording path (no host) of an ended, answered call; for pages outdial serves itself. */
  recordingPath(callId: string, status: CallStatus, duration: number | null): string | null {
    return this.links.path(callId, status, duration);
  }

  private verifyRecordingToken(callId: string, token: string): boolean {
    return this.links.verify(callId, token);
  }
}
