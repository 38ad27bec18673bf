import dgram from 'node:dgram';
import { EventEmitter } from 'node:events';
import {
  cseqMethod,
  digestAuthorization,
  header,
  newBranch,
  newCallId,
  newTag,
  parseChallenge,
  parseMessage,
  responseTo,
  type SipMessage,
  sdpOffer,
  serialize,
  tagOf,
} from './message.js';

/**
 * A SIP user agent client for outbound calls over UDP: the INVITE client transaction with its
 * retransmissions (RFC 3261 timers A and B), provisional responses, digest authentication on 401
 * or 407, ACK for every final answer, CANCEL when the ring timeout passes, and BYE either way.
 * In the dialog: blind transfer by REFER (RFC 3515) with the far end's NOTIFYs reporting how it
 * went (message/sipfrag), answered with 200.
 */

/** What became of a transfer: the far end reached the target (a 2xx in its NOTIFY), or why not. */
export type ReferResult = { ok: true } | { ok: false; reason: string };

/**
 * What became of an INVITE. `busy`, `no_answer` and `failed` are the callee's side (a number the
 * network refused is `failed`); `rejected` (the trunk refused the call itself: 403, 404, a 5xx
 * other than capacity, our credentials) and `unreachable` (nothing answered the INVITE at all)
 * are the service's (domain/failure.ts); `capacity` is tried again.
 */
export type SipOutcome =
  | { kind: 'answered' }
  | { kind: 'busy'; code: number }
  | { kind: 'no_answer'; code: number | null; reason: string }
  | { kind: 'capacity'; code: number }
  | { kind: 'failed'; code: number | null; reason: string }
  | { kind: 'rejected'; code: number; reason: string }
  | { kind: 'unreachable'; reason: string };

/**
 * A trunk that has answered none of an INVITE's sends after this long is unreachable. A live SIP
 * server answers an INVITE with 100 Trying within 200 ms (RFC 3261 17.2.1), so silence over the
 * first send and its 4 retransmissions (timer A: at 0.5, 1.5, 3.5 and 7.5 s) is an outage, not a
 * callee who does not pick up; timer B's 64*T1 (32 s) would spend half a minute per call on it.
 */
export const TRUNK_SILENCE_MS = 16 * 500; // 16 T1

/** What a carrier's final answer to an INVITE means for the call. */
export function outcomeOf(code: number, reason = ''): SipOutcome {
  if (code >= 200 && code < 300) return { kind: 'answered' };
  if (code === 486 || code === 600 || code === 603) return { kind: 'busy', code };
  if (code === 503 || code === 429 || (code === 480 && /capacity|congest|overload|limit/i.test(reason))) {
    return { kind: 'capacity', code };
  }
  if (code === 408 || code === 480 || code === 487)
    return { kind: 'no_answer', code, reason: reason || 'no answer' };
  // Refusals of the call itself, whoever is called: the trunk's configuration, our account or
  // credentials (a challenge we could not meet reaches here as 401/407), or the trunk failing.
  if (code === 401 || code === 403 || code === 404 || code === 407 || (code >= 500 && code < 600))
    return { kind: 'rejected', code, reason: reason || `SIP ${code}` };
  return { kind: 'failed', code, reason: reason || `SIP ${code}` };
}

export interface InviteOptions {
  host: string;
  port: number;
  /** The number called (the request URI's user part). */
  to: string;
  /** The caller number. */
  from: string;
  credentials?: { username: string; password: string };
  /** CANCEL after this long without an answer. */
  ringTimeoutMs: number;
  /** The local RTP port offered in the SDP. */
  rtpPort?: number;
  /**
   * Our call id, sent as `X-Outdial-Call-Id` on the INVITE: the SIP Call-ID is new for every
   * INVITE (a capacity retry is a new one), so this is what ties a carrier's records of one call
   * together and to ours (support tickets, CDR reconciliation, the soak's accounting).
   */
  reference?: string;
}

const T1 = 500;
/** How long an INVITE given up before any provisional answer waits for one to CANCEL it: 4 T1. */
const PROVISIONAL_WAIT_MS = 4 * T1;
/** Non-INVITE retransmissions double up to this interval (RFC 3261 T2). */
const T2 = 4000;
/** How long a transfer waits, after its REFER was accepted, for the NOTIFY with its final status. */
const REFER_NOTIFY_TIMEOUT_MS = 30_000;

export class SipCall extends EventEmitter {
  readonly callId: string;
  private readonly fromTag = newTag();
  private toTag: string | undefined;
  private cseq = 1;
  private branch = newBranch();
  private inviteText = '';
  private retransmit: NodeJS.Timeout | null = null;
  private transactionTimeout: NodeJS.Timeout | null = null;
  private ringTimer: NodeJS.Timeout | null = null;
  private invitedAt = 0;
  private authTried = false;
  private cancelled = false;
  /** Given up before any provisional answer: the CANCEL goes once one comes (RFC 3261 9.1). */
  private cancelOnProvisional: NodeJS.Timeout | null = null;
  private state: 'calling' | 'proceeding' | 'answered' | 'ended' = 'calling';
  /** Our in-dialog requests waiting for their final answer, by CSeq number. */
  private readonly pending = new Map<number, (response: SipMessage | null) => void>();
  /** Resolves with the INVITE's outcome (answered, busy, ...). */
  readonly outcome: Promise<SipOutcome>;
  /** Resolves when an answered call has ended, with who hung up. */
  readonly ended: Promise<{ by: 'local' | 'remote' }>;
  private settleOutcome!: (outcome: SipOutcome) => void;
  private settleEnded!: (end: { by: 'local' | 'remote' }) => void;
  /** The SIP status code of the final answer. */
  finalCode: number | null = null;
  /** The body of the 2xx that answered the call: the far end's SDP. */
  answerSdp = '';
  /** Our SDP offer: the same in every INVITE of the call and in answers to the far end's re-INVITEs. */
  private localSdp = '';

  constructor(
    private readonly agent: SipUserAgent,
    private readonly options: InviteOptions,
  ) {
    super();
    this.callId = newCallId(agent.address);
    this.outcome = new Promise((resolve) => {
      this.settleOutcome = resolve;
    });
    this.ended = new Promise((resolve) => {
      this.settleEnded = resolve;
    });
  }

  private get requestUri() {
    return `sip:${this.options.to}@${this.options.host}:${this.options.port}`;
  }
  private get fromHeader() {
    return `<sip:${this.options.from}@${this.agent.address}>;tag=${this.fromTag}`;
  }
  private toHeader(withTag: boolean) {
    return `<sip:${this.options.to}@${this.options.host}>${withTag && this.toTag ? `;tag=${this.toTag}` : ''}`;
  }
  private get contact() {
    return `<sip:outdial@${this.agent.address}:${this.agent.port}>`;
  }
  private via(branch: string) {
    return `SIP/2.0/UDP ${this.agent.address}:${this.agent.port};branch=${branch};rport`;
  }

  start(): void {
    this.invitedAt = Date.now();
    this.sendInvite();
    this.ringTimer = setTimeout(() => this.cancel('ring-timeout'), this.options.ringTimeoutMs);
  }

  private sendInvite(authorization?: { name: string; value: string }): void {
    this.localSdp ||= sdpOffer(this.agent.address, this.options.rtpPort ?? 40000);
    const sdp = this.localSdp;
    this.inviteText = serialize(
      `INVITE ${this.requestUri} SIP/2.0`,
      [
        ['Via', this.via(this.branch)],
        ['Max-Forwards', 70],
        ['From', this.fromHeader],
        ['To', this.toHeader(false)],
        ['Call-ID', this.callId],
        ['CSeq', `${this.cseq} INVITE`],
        ['Contact', this.contact],
        ['User-Agent', 'outdial'],
        ...(this.options.reference
          ? ([['X-Outdial-Call-Id', this.options.reference]] as Array<[string, string]>)
          : []),
        ...(authorization ? ([[authorization.name, authorization.value]] as Array<[string, string]>) : []),
        ['Content-Type', 'application/sdp'],
      ],
      sdp,
    );
    this.send(this.inviteText);
    // Timer A: retransmit until something answers, doubling; timer B: give up after 64*T1.
    let interval = T1;
    const again = () => {
      this.retransmit = setTimeout(() => {
        if (this.state !== 'calling') return;
        this.send(this.inviteText);
        interval *= 2;
        again();
      }, interval);
    };
    again();
    // Silence past TRUNK_SILENCE_MS: the trunk is down (before timer B's 64*T1 would say so).
    this.transactionTimeout = setTimeout(() => {
      if (this.state === 'calling') this.finish(this.unanswered());
    }, TRUNK_SILENCE_MS);
  }

  private send(text: string): void {
    this.agent.sendTo(text, this.options.host, this.options.port);
  }

  /** A response or request for this call, routed here by the user agent. */
  receive(message: SipMessage): void {
    if (message.status === 0) {
      this.onRequest(message);
      return;
    }
    const method = cseqMethod(message);
    if (method !== 'INVITE' && method !== 'CANCEL') {
      const number = Number.parseInt(header(message, 'cseq') ?? '', 10);
      if (message.status >= 200) this.pending.get(number)?.(message);
      return;
    }
    if (method === 'CANCEL') return; // its 200; the INVITE's 487 follows
    if (method !== 'INVITE') return;
    if (this.retransmit) clearTimeout(this.retransmit);
    if (message.status < 200) {
      if (this.state === 'calling') this.state = 'proceeding';
      this.toTag ??= tagOf(header(message, 'to'));
      if (this.cancelOnProvisional) {
        clearTimeout(this.cancelOnProvisional);
        this.cancelOnProvisional = null;
        this.sendCancel();
      }
      return;
    }
    if (this.transactionTimeout) clearTimeout(this.transactionTimeout);
    this.toTag = tagOf(header(message, 'to')) ?? this.toTag;
    if (message.status >= 200 && message.status < 300) {
      this.ack(message, true);
      if (this.state === 'answered' || this.state === 'ended') return; // a retransmitted 200
      if (this.ringTimer) clearTimeout(this.ringTimer);
      this.state = 'answered';
      this.finalCode = message.status;
      this.answerSdp = message.body;
      this.settleOutcome({ kind: 'answered' });
      return;
    }
    this.ack(message, false);
    if (this.state === 'ended') return;
    const challenge =
      message.status === 401 || message.status === 407
        ? parseChallenge(
            header(message, message.status === 401 ? 'www-authenticate' : 'proxy-authenticate') ?? '',
          )
        : null;
    if (challenge && this.options.credentials && !this.authTried && !this.cancelled) {
      this.authTried = true;
      this.cseq++;
      this.branch = newBranch();
      this.state = 'calling';
      this.sendInvite({
        name: message.status === 401 ? 'Authorization' : 'Proxy-Authorization',
        value: digestAuthorization(challenge, this.options.credentials, 'INVITE', this.requestUri),
      });
      return;
    }
    const outcome =
      this.cancelled && message.status === 487
        ? ({ kind: 'no_answer', code: 487, reason: 'ring timeout' } as const)
        : outcomeOf(message.status, message.reason);
    this.finalCode = message.status;
    this.finish(outcome);
  }

  private onRequest(message: SipMessage): void {
    const response = (code: number, reason: string, sdp?: string) =>
      sdp === undefined
        ? responseTo(message, code, reason)
        : responseTo(
            message,
            code,
            reason,
            [
              ['Contact', this.contact],
              ['Content-Type', 'application/sdp'],
            ],
            sdp,
          );
    if (message.method === 'BYE') {
      this.send(response(200, 'OK'));
      if (this.state === 'answered') {
        this.state = 'ended';
        this.abandonRequests();
        this.settleEnded({ by: 'remote' });
      }
    } else if ((message.method === 'INVITE' || message.method === 'UPDATE') && this.state === 'answered') {
      // A session refresh, or the far end moving its media: the session goes on as it is, so the
      // answer is the SDP we offered, unchanged; a new remote address is announced.
      if (message.body.trim() !== '') this.emit('remoteSdp', message.body);
      this.send(response(200, 'OK', this.localSdp));
    } else if (message.method === 'NOTIFY') {
      // A transfer's progress: the status line of the far end's call to the target, as sipfrag.
      this.send(response(200, 'OK'));
      const frag = /^SIP\/2\.0 (\d{3}) ?(.*)$/m.exec(message.body);
      if (frag) this.emit('referStatus', Number(frag[1]), (frag[2] ?? '').trim());
      else if (/terminated/i.test(header(message, 'subscription-state') ?? ''))
        this.emit('referStatus', 0, 'the transfer subscription ended without a final status');
    } else if (message.method === 'OPTIONS' || message.method === 'INFO') {
      // Keep-alive probes and mid-call information (DTMF by INFO, which is not used): acknowledged.
      this.send(response(200, 'OK'));
    } else if (message.method !== 'ACK') {
      this.send(response(405, 'Method Not Allowed'));
    }
  }

  /** ACK: for a 2xx a new transaction (new branch, to the dialog); otherwise part of the INVITE's. */
  private ack(response: SipMessage, success: boolean): void {
    this.send(
      serialize(`ACK ${this.requestUri} SIP/2.0`, [
        ['Via', this.via(success ? newBranch() : this.branch)],
        ['Max-Forwards', 70],
        ['From', this.fromHeader],
        ['To', header(response, 'to') ?? this.toHeader(true)],
        ['Call-ID', this.callId],
        ['CSeq', `${this.cseq} ACK`],
      ]),
    );
  }

  /** The end of an INVITE nothing answered, not even with 100 Trying: the trunk is unreachable. */
  private unanswered(): SipOutcome {
    const seconds = ((Date.now() - this.invitedAt) / 1000).toFixed(1);
    return {
      kind: 'unreachable',
      reason: `the trunk answered none of the INVITE's sends in ${seconds} s`,
    };
  }

  /**
   * CANCELs the INVITE: the ring timeout passed, or the call is given up before an answer (a stop
   * of this process: `why` 'given-up', the caller's default).
   */
  cancel(why: 'ring-timeout' | 'given-up' = 'given-up'): void {
    if (this.state !== 'proceeding' && this.state !== 'calling') return;
    if (this.cancelled) return;
    this.cancelled = true;
    if (this.state === 'calling') {
      // Nothing answered at all: a CANCEL is only sent once a provisional response came. Past the
      // ring timeout that silence is the trunk's. A call given up sooner waits a moment for the
      // provisional answer already on its way (the far end may be ringing), then cancels it; if
      // none comes, it says nothing of the trunk.
      const gaveUp = () =>
        this.finish(
          why === 'ring-timeout'
            ? this.unanswered()
            : { kind: 'no_answer', code: null, reason: 'given up before any answer' },
        );
      if (why === 'ring-timeout') {
        gaveUp();
        return;
      }
      this.cancelOnProvisional = setTimeout(() => {
        this.cancelOnProvisional = null;
        if (this.state === 'calling') gaveUp();
      }, PROVISIONAL_WAIT_MS);
      return;
    }
    this.sendCancel();
  }

  private sendCancel(): void {
    this.send(
      serialize(`CANCEL ${this.requestUri} SIP/2.0`, [
        ['Via', this.via(this.branch)],
        ['Max-Forwards', 70],
        ['From', this.fromHeader],
        ['To', this.toHeader(false)],
        ['Call-ID', this.callId],
        ['CSeq', `${this.cseq} CANCEL`],
      ]),
    );
  }

  /** Hangs up an answered call with BYE; resolves with the far end's status code. */
  async hangup(): Promise<number | null> {
    if (this.state !== 'answered') return null;
    this.state = 'ended';
    this.abandonRequests();
    const response = await this.request('BYE');
    this.settleEnded({ by: 'local' });
    this.agent.forget(this.callId);
    return response?.status ?? null;
  }

  /**
   * Blind transfer: a REFER in the dialog asking the far end to call `target` (a SIP URI). Once
   * accepted (2xx), the far end's NOTIFYs report its call to the target; the first final status
   * decides: 2xx is done (the caller hangs up its leg), anything else, a refusal of the REFER, no
   * answer, or the call ending first is a failure with its reason.
   */
  async refer(target: string): Promise<ReferResult> {
    if (this.state !== 'answered') return { ok: false, reason: 'the call is not up' };
    let listener: (code: number, reason: string) => void = () => {};
    let timer: NodeJS.Timeout | undefined;
    // Listened for before the REFER goes out: a NOTIFY may overtake the 202 on UDP.
    const notified = new Promise<ReferResult>((resolve) => {
      listener = (code, reason) => {
        if (code >= 100 && code < 200) return; // still trying
        resolve(
          code >= 200 && code < 300
            ? { ok: true }
            : {
                ok: false,
                reason: code ? `the transfer target answered SIP ${code} ${reason}`.trim() : reason,
              },
        );
      };
      this.on('referStatus', listener);
    });
    try {
      const response = await this.request('REFER', [
        ['Refer-To', `<${target}>`],
        ['Referred-By', `<sip:${this.options.from}@${this.agent.address}>`],
      ]);
      if (!response) return { ok: false, reason: 'the far end did not answer the REFER' };
      if (response.status >= 300)
        return {
          ok: false,
          reason: `the far end refused the transfer: SIP ${response.status} ${response.reason}`.trim(),
        };
      const gone = this.ended.then(
        (): ReferResult => ({ ok: false, reason: 'the call ended before the transfer' }),
      );
      const late = new Promise<ReferResult>((resolve) => {
        timer = setTimeout(
          () => resolve({ ok: false, reason: 'no final transfer status from the far end' }),
          REFER_NOTIFY_TIMEOUT_MS,
        );
      });
      return await Promise.race([notified, gone, late]);
    } finally {
      clearTimeout(timer);
      this.off('referStatus', listener);
    }
  }

  /** The dialog is over: requests still waiting (a REFER) stop retransmitting and resolve null. */
  private abandonRequests(): void {
    for (const settle of [...this.pending.values()]) settle(null);
  }

  /**
   * One non-INVITE request in the dialog (BYE, REFER): retransmitted, doubling up to T2, until a
   * final answer or 64*T1 (RFC 3261 timers E and F); resolves with the answer, or null.
   */
  private request(method: string, extra: Array<[string, string]> = []): Promise<SipMessage | null> {
    this.cseq++;
    const number = this.cseq;
    const text = serialize(`${method} ${this.requestUri} SIP/2.0`, [
      ['Via', this.via(newBranch())],
      ['Max-Forwards', 70],
      ['From', this.fromHeader],
      ['To', this.toHeader(true)],
      ['Call-ID', this.callId],
      ['CSeq', `${number} ${method}`],
      ['Contact', this.contact],
      ...extra,
    ]);
    return new Promise<SipMessage | null>((resolve) => {
      let interval = T1;
      let timer: NodeJS.Timeout;
      const settle = (response: SipMessage | null) => {
        clearTimeout(timer);
        clearTimeout(give);
        this.pending.delete(number);
        resolve(response);
      };
      const give = setTimeout(() => settle(null), 64 * T1);
      this.pending.set(number, settle);
      const again = () => {
        this.send(text);
        interval = Math.min(interval * 2, T2);
        timer = setTimeout(again, interval);
      };
      again();
    });
  }

  private finish(outcome: SipOutcome): void {
    if (this.state === 'ended') return;
    this.state = 'ended';
    for (const timer of [this.retransmit, this.transactionTimeout, this.ringTimer, this.cancelOnProvisional])
      if (timer) clearTimeout(timer);
    this.settleOutcome(outcome);
    this.settleEnded({ by: 'local' });
    // Keep routing a little longer: retransmitted finals still need their ACK.
    setTimeout(() => this.agent.forget(this.callId), 32 * T1).unref();
  }
}

/** One UDP socket, many calls: messages are routed to their call by Call-ID. */
export class SipUserAgent {
  private readonly socket = dgram.createSocket('udp4');
  private readonly calls = new Map<string, SipCall>();
  port = 0;

  /**
   * `address` is the one the far end sees (Via, Contact, SDP); `bindAddress` the local one the
   * socket listens on ('0.0.0.0' behind a NAT with a public address, for example).
   */
  constructor(
    readonly address = '127.0.0.1',
    private readonly bindAddress = address,
  ) {
    this.socket.on('message', (data, from) => {
      let message: SipMessage;
      try {
        message = parseMessage(data.toString('utf8'));
      } catch {
        return; // not SIP: ignored
      }
      const call = this.calls.get(header(message, 'call-id') ?? '');
      if (call) call.receive(message);
      else if (message.status === 0 && message.method !== 'ACK' && tagOf(header(message, 'to'))) {
        // An in-dialog request (its To has our tag) for a dialog this process does not know: a
        // call of a process that stopped, or one long forgotten. RFC 3261 12.2.2: 481, so the far
        // end stops retransmitting (a BYE would otherwise be sent 11 times over 32 s) and clears it.
        this.socket.send(
          responseTo(message, 481, 'Call/Transaction Does Not Exist'),
          from.port,
          from.address,
        );
      }
    });
  }

  async start(port = 0): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.socket.once('error', reject);
      this.socket.bind(port, this.bindAddress, () => {
        this.socket.off('error', reject);
        resolve();
      });
    });
    // A send that fails (an ICMP unreachable reported on the socket) must not bring the process
    // down: the transaction it belonged to times out like any unanswered request.
    this.socket.on('error', () => {});
    this.port = this.socket.address().port;
  }

  invite(options: InviteOptions): SipCall {
    const call = new SipCall(this, options);
    this.calls.set(call.callId, call);
    call.start();
    return call;
  }

  sendTo(text: string, host: string, port: number): void {
    this.socket.send(text, port, host);
  }

  forget(callId: string): void {
    this.calls.delete(callId);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}
