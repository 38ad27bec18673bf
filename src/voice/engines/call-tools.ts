/**
 * Runs the tools a model calls during a call, for every engine that has a model (llm, realtime):
 * the built-in call tools (end_call, transfer_call, send_dtmf, leave_voicemail) and the agent's
 * HTTP tools. Each call is recorded on the call (session.addToolCall) and answered with the JSON
 * the model reads back; a failure is an answer too.
 */
import type { Logger } from 'pino';
import type { EndedReason, ToolCallRecord } from '../../domain/agent-call.js';
import { systemPrompt } from '../../domain/dialogue.js';
import type { ChatToolCall, ConversationSession } from '../contracts.js';
import type { HttpToolCaller } from '../http-tools.js';
import { bounded } from './llm-output.js';
import { DTMF_DIGITS, httpToolNamed, isBuiltIn, parseArguments } from './llm-tools.js';

/** A transfer waits for the far end's REFER answer and its NOTIFY; carriers answer within seconds. */
const TRANSFER_TIMEOUT_MS = 30_000;
const DTMF_TIMEOUT_MS = 10_000;

export interface ToolOutcome {
  /** The answer for the model (JSON). */
  content: string;
  /** The tool ended the call (end_call, leave_voicemail, an accepted transfer). */
  ends: boolean;
}

export interface CallToolsOptions {
  session: ConversationSession;
  /** Calls the agents' HTTP tools; without it, an HTTP tool the model calls fails (the model is told). */
  httpTools: HttpToolCaller | null | undefined;
  logger: Logger | undefined;
  /** Ends the call with its reason (the engine's own bookkeeping, then session.hangup). */
  end(reason: EndedReason): void;
  /** Says the agent's voicemail message (leave_voicemail); resolves once it played out. */
  speak(text: string): Promise<unknown>;
}

export class CallTools {
  constructor(private readonly options: CallToolsOptions) {}

  /** Runs one tool call; `signal` is the turn's (an HTTP tool or DTMF is cut short by it). */
  run(call: ChatToolCall, signal: AbortSignal): Promise<ToolOutcome> {
    return isBuiltIn(call.function.name) ? this.builtIn(call, signal) : this.http(call, signal);
  }

  async builtIn(call: ChatToolCall, signal: AbortSignal): Promise<ToolOutcome> {
    const { session } = this.options;
    const at = new Date();
    const parsed = parseArguments(call.function.arguments);
    const args = parsed.ok ? parsed.value : {};
    const record = (result: unknown, error: string | null) => {
      const entry: ToolCallRecord = {
        name: call.function.name,
        arguments: args,
        result,
        error,
        at: at.toISOString(),
        durationMs: Date.now() - at.getTime(),
      };
      session.addToolCall(entry);
      this.options.logger?.info({ tool: entry.name, error }, 'tool call');
      return JSON.stringify(error === null ? (result ?? { ok: true }) : { ok: false, error });
    };
    const name = call.function.name;
    switch (name) {
      case 'end_call': {
        const content = record({ ok: true }, null);
        this.options.end('agent-ended');
        return { content, ends: true };
      }
      case 'leave_voicemail': {
        const message = session.config.voicemailMessage;
        const content = record({ ok: true, message }, null);
        if (message) await this.options.speak(message);
        this.options.end('voicemail');
        return { content, ends: true };
      }
      case 'transfer_call': {
        const to = session.config.transferNumber;
        if (!to) return { content: record(null, 'no transfer number is set for this agent'), ends: false };
        let result: { ok: true } | { ok: false; reason: string };
        try {
          // Not cut short by the call's end: an accepted transfer is what ends it.
          const never = new AbortController().signal;
          result = await bounded(session.transfer(to), TRANSFER_TIMEOUT_MS, never, 'transfer');
        } catch (error) {
          result = { ok: false, reason: error instanceof Error ? error.message : String(error) };
        }
        if (result.ok) {
          const content = record({ ok: true, to }, null);
          this.options.end('transferred');
          return { content, ends: true };
        }
        return { content: record(null, `the transfer failed: ${result.reason}`), ends: false };
      }
      case 'send_dtmf': {
        const digits = typeof args.digits === 'string' ? args.digits.replace(/\s+/g, '').toUpperCase() : '';
        if (!DTMF_DIGITS.test(digits)) {
          return {
            content: record(null, 'digits must be keys of the phone keypad: 0-9, * and #'),
            ends: false,
          };
        }
        try {
          const sent = await bounded(session.sendDtmf(digits), DTMF_TIMEOUT_MS, signal, 'DTMF');
          if (!sent) return { content: record(null, 'the far end does not take keypad tones'), ends: false };
          return { content: record({ ok: true, digits }, null), ends: false };
        } catch (error) {
          return {
            content: record(null, error instanceof Error ? error.message : String(error)),
            ends: session.signal.aborted,
          };
        }
      }
      default:
        return { content: record(null, `there is no tool named ${name}`), ends: false };
    }
  }

  async http(call: ChatToolCall, signal: AbortSignal): Promise<ToolOutcome> {
    const { session, httpTools } = this.options;
    const at = new Date();
    const parsed = parseArguments(call.function.arguments);
    const tool = httpToolNamed(session.config, call.function.name);
    let outcome: { ok: true; result: unknown } | { ok: false; error: string };
    if (!parsed.ok) outcome = { ok: false, error: parsed.error };
    else if (!tool) outcome = { ok: false, error: `there is no tool named ${call.function.name}` };
    else if (!httpTools) outcome = { ok: false, error: 'HTTP tools are not available in this process' };
    else outcome = await httpTools.call(tool, parsed.value, session.callId, signal);
    const entry: ToolCallRecord = {
      name: call.function.name,
      arguments: parsed.ok ? parsed.value : {},
      result: outcome.ok ? outcome.result : null,
      error: outcome.ok ? null : outcome.error,
      at: at.toISOString(),
      durationMs: Date.now() - at.getTime(),
    };
    session.addToolCall(entry);
    this.options.logger?.info(
      { tool: entry.name, error: entry.error, durationMs: entry.durationMs },
      'tool call',
    );
    return {
      content: JSON.stringify(outcome.ok ? outcome.result : { ok: false, error: outcome.error }),
      ends: false,
    };
  }
}

/** The system prompt of the call's agent, as every engine with a model gives it. */
export function sessionPrompt(session: ConversationSession): string {
  return systemPrompt({
    instructions: session.config.instructions,
    agentName: session.agent.agentName ?? session.agent.name,
    contactName: session.contact.name,
    language: session.agent.language,
    canTransfer: session.config.transferNumber !== null,
    media: session.media,
  });
}
