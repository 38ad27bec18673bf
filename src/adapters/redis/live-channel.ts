import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  isLiveCallEvent,
  isLiveCommand,
  type LiveCallEvent,
  type LiveCommand,
  type LiveReply,
  type LiveRequestResult,
} from '../../domain/live-call.js';
import type { LiveCallChannel } from '../../ports.js';

export interface RedisLiveChannelOptions {
  /** The connection commands and events are published on (the live cache's). */
  redis: Redis;
  /** Prefix of every channel name (pub/sub channels are not keys: ioredis's keyPrefix skips them). */
  prefix: string;
  /** How long a SUBSCRIBE may take before the step that needed it fails (default 5 s). */
  subscribeTimeoutMs?: number;
  logger?: Logger;
}

type Handler = (command: LiveCommand) => Promise<LiveReply>;

interface CommandMessage {
  id: string;
  replyTo: string;
  command: LiveCommand;
}

/**
 * The live call channel over Redis pub/sub, so the API process that gets a request may be another
 * host than the one holding the call. Per call: `<prefix>live:<callId>:cmd` carries commands to
 * its host, `<prefix>live:<callId>:events` its events; each process answers on its own
 * `<prefix>live:reply:<uuid>`. PUBLISH answers how many subscribers got a message, which tells
 * "no host holds this call" (0) from "the host did not answer in time". Subscriptions are held on
 * one separate connection (a subscribed connection can do nothing else); ioredis subscribes it
 * again after a reconnect.
 */
export class RedisLiveChannel implements LiveCallChannel {
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly prefix: string;
  private readonly replyChannel: string;
  private replyReady: Promise<void> | null = null;
  private readonly pending = new Map<string, (reply: LiveReply) => void>();
  private readonly hosts = new Map<string, Handler>();
  private readonly followers = new Map<string, Set<(event: LiveCallEvent) => void>>();
  private readonly subscribeTimeoutMs: number;

  constructor(private readonly options: RedisLiveChannelOptions) {
    this.pub = options.redis;
    // Unlike the publishing connection, SUBSCRIBE may wait for the connection (bounded below).
    this.sub = options.redis.duplicate({ enableOfflineQueue: true, enableAutoPipelining: false });
    this.sub.on('error', () => {});
    this.sub.on('message', (channel: string, message: string) => this.received(channel, message));
    this.prefix = options.prefix;
    this.replyChannel = `${this.prefix}live:reply:${randomUUID()}`;
    this.subscribeTimeoutMs = options.subscribeTimeoutMs ?? 5000;
  }

  async serve(callId: string, handler: Handler): Promise<() => Promise<void>> {
    const channel = this.commands(callId);
    this.hosts.set(channel, handler);
    try {
      await this.subscribeTo(channel);
    } catch (error) {
      this.hosts.delete(channel);
      throw error;
    }
    return async () => {
      if (this.hosts.get(channel) !== handler) return;
      this.hosts.delete(channel);
      await this.sub.unsubscribe(channel).catch(() => undefined);
    };
  }

  async request(callId: string, command: LiveCommand, timeoutMs: number): Promise<LiveRequestResult> {
    const deadline = Date.now() + timeoutMs;
    this.replyReady ??= this.subscribeTo(this.replyChannel).catch((error: unknown) => {
      this.replyReady = null;
      throw error;
    });
    await this.replyReady;
    const id = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const reply = new Promise<LiveRequestResult>((resolve) => {
      this.pending.set(id, resolve);
      timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
    });
    try {
      const message: CommandMessage = { id, replyTo: this.replyChannel, command };
      const receivers = await this.pub.publish(this.commands(callId), JSON.stringify(message));
      if (receivers === 0) return 'not-live';
      return await reply;
    } finally {
      clearTimeout(timer);
      this.pending.delete(id);
    }
  }

  async publish(callId: string, event: LiveCallEvent): Promise<void> {
    await this.pub.publish(this.events(callId), JSON.stringify(event));
  }

  async subscribe(callId: string, listener: (event: LiveCallEvent) => void): Promise<() => Promise<void>> {
    const channel = this.events(callId);
    let set = this.followers.get(channel);
    const first = !set;
    if (!set) {
      set = new Set();
      this.followers.set(channel, set);
    }
    set.add(listener);
    const stop = async () => {
      const current = this.followers.get(channel);
      if (!current?.delete(listener) || current.size > 0) return;
      this.followers.delete(channel);
      await this.sub.unsubscribe(channel).catch(() => undefined);
    };
    try {
      // A second follower in this process shares the subscription (Redis counts the connection once).
      if (first) await this.subscribeTo(channel);
    } catch (error) {
      await stop();
      throw error;
    }
    return stop;
  }

  async close(): Promise<void> {
    for (const resolve of this.pending.values())
      resolve({ ok: false, outcome: 'refused', reason: 'closing' });
    this.pending.clear();
    this.hosts.clear();
    this.followers.clear();
    await this.sub.quit().catch(() => this.sub.disconnect());
  }

  private commands(callId: string): string {
    return `${this.prefix}live:${callId}:cmd`;
  }

  private events(callId: string): string {
    return `${this.prefix}live:${callId}:events`;
  }

  private async subscribeTo(channel: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.sub.subscribe(channel),
        new Promise((_, reject) => {
          timer = setTimeout(
            () =>
              reject(new Error(`Redis did not take the subscription within ${this.subscribeTimeoutMs} ms`)),
            this.subscribeTimeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private received(channel: string, message: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      this.options.logger?.warn({ channel }, 'ignored a live call message that is not JSON');
      return;
    }
    if (channel === this.replyChannel) {
      const { id, reply } = (parsed ?? {}) as { id?: unknown; reply?: LiveReply };
      if (typeof id === 'string' && reply && typeof reply === 'object') this.pending.get(id)?.(reply);
      return;
    }
    const handler = this.hosts.get(channel);
    if (handler) {
      const message = parsed as Partial<CommandMessage> | null;
      if (
        typeof message?.id === 'string' &&
        typeof message.replyTo === 'string' &&
        message.replyTo.startsWith(`${this.prefix}live:reply:`) &&
        isLiveCommand(message.command)
      )
        void this.answer(handler, message as CommandMessage);
      else this.options.logger?.warn({ channel }, 'ignored a live call command we do not know');
      return;
    }
    const followers = this.followers.get(channel);
    if (!followers) return;
    if (!isLiveCallEvent(parsed)) {
      this.options.logger?.warn({ channel }, 'ignored a live call event we do not know');
      return;
    }
    for (const listener of [...followers]) listener(parsed);
  }

  private async answer(handler: Handler, message: CommandMessage): Promise<void> {
    let reply: LiveReply;
    try {
      reply = await handler(message.command);
    } catch (error) {
      reply = {
        ok: false,
        outcome: 'refused',
        reason: error instanceof Error ? error.message : String(error),
      };
    }
    await this.pub
      .publish(message.replyTo, JSON.stringify({ id: message.id, reply }))
      .catch((error: unknown) =>
        this.options.logger?.warn({ err: error }, 'could not send a live call reply'),
      );
  }
}
