import WebSocket from 'ws';

/**
 * A client of a web call's WebSocket (/dashboard/agents/:agentId/talk), as a page or someone's own
 * client speaks it: binary 8 kHz 16-bit PCM both ways, JSON text messages from the server.
 */
export interface TalkMessage {
  type: string;
  [field: string]: unknown;
}

export class TalkClient {
  readonly messages: TalkMessage[] = [];
  /** Byte lengths of the binary messages received (the agent's audio frames). */
  readonly frames: number[] = [];
  closed: { code: number; reason: string } | null = null;
  /** The HTTP status of a refused upgrade. */
  refusedWith: number | null = null;
  private readonly socket: WebSocket;
  private readonly done: Promise<void>;
  private microphone: NodeJS.Timeout | null = null;

  constructor(url: string, headers: Record<string, string>) {
    this.socket = new WebSocket(url, { headers });
    this.socket.on('message', (data, isBinary) => {
      const bytes = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
      if (isBinary) this.frames.push(bytes.length);
      else this.messages.push(JSON.parse(bytes.toString('utf8')) as TalkMessage);
    });
    this.done = new Promise((resolve) => {
      this.socket.on('close', (code, reason) => {
        this.closed = { code, reason: reason.toString('utf8') };
        this.stopSpeaking();
        resolve();
      });
      this.socket.on('unexpected-response', (_request, response) => {
        this.refusedWith = response.statusCode ?? null;
        this.closed = { code: 0, reason: '' };
        resolve();
      });
      this.socket.on('error', () => {});
    });
  }

  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.socket.readyState === WebSocket.OPEN) resolve();
      this.socket.once('open', () => resolve());
      void this.done.then(() => reject(new Error(`not opened: ${JSON.stringify(this.closed)}`)));
    });
  }

  /** Resolves once the server closed the connection (or refused the upgrade). */
  ended(): Promise<{ code: number; reason: string }> {
    return this.done.then(() => this.closed ?? { code: 0, reason: '' });
  }

  /**
   * Speaks like a microphone: `pcm` in 20 ms frames, one every 20 ms, then silence frames until
   * stopped or closed.
   */
  speak(pcm: Int16Array): void {
    this.stopSpeaking();
    let offset = 0;
    this.microphone = setInterval(() => {
      if (this.socket.readyState !== WebSocket.OPEN) return;
      const frame = new Int16Array(160);
      if (offset < pcm.length) frame.set(pcm.subarray(offset, Math.min(offset + 160, pcm.length)));
      offset += 160;
      this.socket.send(Buffer.from(frame.buffer));
    }, 20);
  }

  stopSpeaking(): void {
    if (this.microphone) clearInterval(this.microphone);
    this.microphone = null;
  }

  send(data: Buffer | string): void {
    this.socket.send(data);
  }

  close(): void {
    this.socket.close();
  }

  turns(): Array<{ role: string; content: string }> {
    return this.messages
      .filter((message) => message.type === 'turn')
      .map((message) => ({ role: String(message.role), content: String(message.content) }));
  }

  message(type: string): TalkMessage | undefined {
    return this.messages.find((message) => message.type === type);
  }
}
