import type { Logger } from 'pino';
import { SIP_URI } from '../../../domain/agent-call.js';
import type { RecordedFile } from '../../../ports.js';
import type { CallTransport, PlayResult } from '../../../voice/contracts.js';
import { isDtmf, type RtpSession } from '../rtp.js';
import { parseSdpAnswer, type SdpMedia } from './message.js';
import type { ReferResult, SipCall } from './uac.js';

export interface SipTransportOptions {
  sip: SipCall;
  rtp: RtpSession;
  /** The far end's media from its SDP answer (the RTP session is pointed at it here). */
  media: SdpMedia;
  /** The trunk's host: a transfer to a number is referred to `sip:<number>@<host>`. */
  trunkHost: string;
  /** Where the RTP session records the call, or null when it does not. */
  recordPath: string | null;
  logger?: Logger;
  callId?: string;
}

/**
 * An answered SIP call as the session sees it (CallTransport): audio over the call's RTP
 * session, DTMF as RFC 4733 telephone-events when the far end's answer took them, blind transfer
 * by REFER, and BYE. Its signal is aborted when the far end hangs up.
 */
export class SipCallTransport implements CallTransport {
  readonly media = 'audio' as const;
  private readonly gone = new AbortController();
  readonly signal: AbortSignal = this.gone.signal;
  private telephoneEvent: number | null;
  private bye: Promise<unknown> | null = null;

  constructor(private readonly options: SipTransportOptions) {
    const { sip, rtp, media } = options;
    this.telephoneEvent = media.telephoneEvent;
    rtp.setRemote(media.address, media.port, media.payloadType);
    rtp.start();
    // A re-INVITE may move the far end's media: audio follows it.
    sip.on('remoteSdp', (body: string) => {
      const moved = parseSdpAnswer(body);
      if (!moved) return;
      try {
        rtp.setRemote(moved.address, moved.port, moved.payloadType);
        this.telephoneEvent = moved.telephoneEvent;
      } catch (failure) {
        options.logger?.warn({ err: failure, callId: options.callId }, 'ignored a media move');
      }
    });
    void sip.ended.then(({ by }) => {
      if (by === 'remote') this.gone.abort();
    });
  }

  onAudio(listener: (frame: Int16Array, receivedAt: number) => void): () => void {
    this.options.rtp.on('audio', listener);
    return () => this.options.rtp.off('audio', listener);
  }

  play(pcm: Int16Array, onFirstPacket?: (sentAt: number) => void): Promise<PlayResult> {
    return this.options.rtp.play(pcm, onFirstPacket);
  }

  stopPlayback(): void {
    this.options.rtp.stopPlayback();
  }

  /** Audio only: text is not carried. */
  sayText(): void {}

  onText(): () => void {
    return () => {};
  }

  async sendDtmf(digits: string): Promise<boolean> {
    if (this.telephoneEvent === null || !isDtmf(digits) || this.signal.aborted) return false;
    await this.options.rtp.sendDtmf(digits, this.telephoneEvent);
    return true;
  }

  transfer(to: string): Promise<ReferResult> {
    // A SIP URI (an agent's transferNumber may be one) is referred to as it is.
    if (SIP_URI.test(to.trim())) return this.options.sip.refer(to.trim());
    const number = to.replace(/[^\d+*#A-Za-z]/g, '');
    if (number === '')
      return Promise.resolve({ ok: false, reason: `'${to}' is not a number to transfer to` });
    return this.options.sip.refer(`sip:${number}@${this.options.trunkHost}`);
  }

  hangup(): void {
    this.options.rtp.stopPlayback();
    this.bye ??= this.options.sip.hangup();
  }

  /** Waits for the BYE's answer (or the far end's BYE), closes the media and hands over the recording. */
  async finish(): Promise<RecordedFile | null> {
    this.hangup();
    await this.bye;
    await this.options.rtp.close();
    return this.options.recordPath ? { path: this.options.recordPath, contentType: 'audio/wav' } : null;
  }
}
