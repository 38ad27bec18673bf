import fs from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';

/** The AI-setting flags of `agents create` and `agents update`, as commander parses them. */
export interface AiFlags {
  instructions?: string;
  instructionsFile?: string;
  firstMessage?: string;
  voicemailMessage?: string;
  transferNumber?: string;
  toolsFile?: string;
  /** Seconds, or 'none' (no limit). */
  maxDuration?: string;
  minSpeechMs?: number;
  ignoreWords?: string;
  repromptMs?: number;
  hangupMs?: number;
}

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number of 0 or more');
  return Number(value);
}

/** Adds the AI-setting flags (docs/agents.md) to an agents command. */
export function withAiFlags(command: Command): Command {
  return command
    .option(
      '--instructions <text>',
      'the system prompt; takes {{variables}} such as {{name}} and {{company}}',
    )
    .option('--instructions-file <path>', 'read the system prompt from a file')
    .option('--first-message <text>', 'what the agent says first once a person answers; takes {{variables}}')
    .option('--voicemail-message <text>', 'the message left after the beep when a machine answers')
    .option('--transfer-number <to>', 'where transfer_call sends the callee: E.164 number or sip: URI')
    .option('--tools-file <path>', 'a JSON file with the HTTP tools: [{name, description, parameters, url}]')
    .option('--max-duration <seconds>', "the longest an answered call may last ('none': no limit)")
    .option('--min-speech-ms <ms>', 'how long the callee must speak over the agent to stop it', wholeNumber)
    .option('--ignore-words <words>', 'comma-separated backchannels that never interrupt the agent')
    .option('--reprompt-ms <ms>', 'callee silence before the agent asks again', wholeNumber)
    .option('--hangup-ms <ms>', 'callee silence before the agent hangs up', wholeNumber);
}

function readText(path: string, what: string): string {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(`cannot read the ${what} file ${path}: ${(error as Error).message}`);
  }
}

const asRecord = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/**
 * basicDetails with the flags given applied over `current` (the agent's present settings on
 * update, empty on create); `interruption` and `silence` are merged field by field. The service
 * checks the result (a bad value is its 400, printed with the field).
 */
export function applyAiFlags(current: Record<string, unknown>, flags: AiFlags): Record<string, unknown> {
  const out: Record<string, unknown> = { ...current };
  if (flags.instructions !== undefined && flags.instructionsFile !== undefined) {
    throw new InvalidArgumentError('give --instructions or --instructions-file, not both');
  }
  if (flags.instructions !== undefined) out.instructions = flags.instructions;
  if (flags.instructionsFile !== undefined)
    out.instructions = readText(flags.instructionsFile, 'instructions');
  if (flags.firstMessage !== undefined) out.firstMessage = flags.firstMessage;
  if (flags.voicemailMessage !== undefined) out.voicemailMessage = flags.voicemailMessage;
  if (flags.transferNumber !== undefined) out.transferNumber = flags.transferNumber;
  if (flags.toolsFile !== undefined) {
    const text = readText(flags.toolsFile, 'tools');
    try {
      out.tools = JSON.parse(text);
    } catch (error) {
      throw new InvalidArgumentError(
        `the tools file ${flags.toolsFile} is not JSON: ${(error as Error).message}`,
      );
    }
  }
  // Read here, not by a commander parser: commander keeps a parser's null as an empty string.
  if (flags.maxDuration !== undefined) {
    out.maxDurationSeconds = flags.maxDuration === 'none' ? null : wholeNumber(flags.maxDuration);
  }
  if (flags.minSpeechMs !== undefined || flags.ignoreWords !== undefined) {
    out.interruption = {
      ...asRecord(current.interruption),
      ...(flags.minSpeechMs !== undefined ? { minSpeechMs: flags.minSpeechMs } : {}),
      ...(flags.ignoreWords !== undefined
        ? {
            ignoreWords: flags.ignoreWords
              .split(',')
              .map((word) => word.trim())
              .filter((word) => word !== ''),
          }
        : {}),
    };
  }
  if (flags.repromptMs !== undefined || flags.hangupMs !== undefined) {
    out.silence = {
      ...asRecord(current.silence),
      ...(flags.repromptMs !== undefined ? { repromptMs: flags.repromptMs } : {}),
      ...(flags.hangupMs !== undefined ? { hangupMs: flags.hangupMs } : {}),
    };
  }
  return out;
}
