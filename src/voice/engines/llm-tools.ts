/**
 * The tools the LLM engine offers the model: the built-in call tools (end_call, transfer_call,
 * send_dtmf, leave_voicemail) and the agent's HTTP tools, in the chat API's function format.
 */
import type { AgentTools, HttpTool } from '../../domain/agent-call.js';
import type { ChatTool } from '../contracts.js';

export const BUILT_IN_TOOLS = ['end_call', 'transfer_call', 'send_dtmf', 'leave_voicemail'] as const;
export type BuiltInTool = (typeof BUILT_IN_TOOLS)[number];

export function isBuiltIn(name: string): name is BuiltInTool {
  return (BUILT_IN_TOOLS as readonly string[]).includes(name);
}

const NO_ARGUMENTS = { type: 'object', properties: {}, additionalProperties: false };

/** RFC 4733 events: digits, star, pound and A-D. */
export const DTMF_DIGITS = /^[0-9*#A-D]{1,32}$/;

/**
 * The tools for one call. transfer_call only when the agent has a transferNumber (the number is
 * the agent's, never the model's choice); an HTTP tool named like a built-in one is left out.
 */
export function chatTools(config: AgentTools): ChatTool[] {
  const tools: ChatTool[] = [
    {
      type: 'function',
      function: {
        name: 'end_call',
        description:
          'Hang up the call. Say your goodbye in the same reply, before calling this; it is played out before the line is closed.',
        parameters: NO_ARGUMENTS,
      },
    },
  ];
  if (config.transferNumber) {
    tools.push({
      type: 'function',
      function: {
        name: 'transfer_call',
        description:
          'Transfer the call to a person. Tell the callee first ("Let me put you through"). If the transfer fails you get the reason and stay on the call.',
        parameters: NO_ARGUMENTS,
      },
    });
  }
  tools.push(
    {
      type: 'function',
      function: {
        name: 'send_dtmf',
        description: 'Press keys on the phone keypad, e.g. to choose an option in a phone menu.',
        parameters: {
          type: 'object',
          properties: {
            digits: {
              type: 'string',
              description: 'The keys to press, in order: 0-9, * and #.',
              pattern: '^[0-9*#A-D]+$',
            },
          },
          required: ['digits'],
          additionalProperties: false,
        },
      },
    },
    {
      type: 'function',
      function: {
        name: 'leave_voicemail',
        description:
          'Call this when you reached an answering machine or a voicemail greeting instead of a person: the voicemail message is left and the call ends.',
        parameters: NO_ARGUMENTS,
      },
    },
  );
  for (const tool of config.tools) {
    if (isBuiltIn(tool.name)) continue;
    tools.push({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    });
  }
  return tools;
}

/** The agent's HTTP tool the model named, if any (built-in names never reach one). */
export function httpToolNamed(config: AgentTools, name: string): HttpTool | null {
  if (isBuiltIn(name)) return null;
  return config.tools.find((tool) => tool.name === name) ?? null;
}

/** The model's arguments as an object; they arrive as a JSON string. */
export function parseArguments(
  raw: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (raw.trim() === '') return { ok: true, value: {} };
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      return { ok: true, value: value as Record<string, unknown> };
    }
    return { ok: false, error: 'the arguments must be a JSON object' };
  } catch {
    return { ok: false, error: 'the arguments are not valid JSON' };
  }
}
