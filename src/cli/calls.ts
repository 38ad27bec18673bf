import { type Command, InvalidArgumentError, Option } from 'commander';
import type { CallListItem } from '../services/calls/reads.js';
import type { AdminClient } from './admin-client.js';
import { formatTable, printResult } from './output.js';

/** Longest contact name shown in the table; --json has the whole of it. */
const NAME_WIDTH = 24;

/** The flags of `outdial call list`, each the query parameter of GET /api/v1/calls it sets. */
const FILTERS = [
  ['status', 'status', 'only calls in this status (ONGOING, COMPLETED, NO_ANSWER, BUSY, FAILED, VOICEMAIL)'],
  ['batchId', 'batch-id', 'only the calls of this campaign'],
  [
    'phoneNumber',
    'phone-number',
    "only the calls to this number (E.164, or national in your account's defaultCountry)",
  ],
  ['from', 'from', 'only calls created at or after this ISO 8601 instant'],
  ['to', 'to', 'only calls created before this ISO 8601 instant'],
  ['cursor', 'cursor', 'the page after this cursor (printed under a full page)'],
] as const;

type Filters = Partial<Record<(typeof FILTERS)[number][0], string>>;

function whole(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
}

const shortDate = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

/** `outdial call list`: the key's user's calls, newest first, as a table or (--json) the API's items. */
export function registerCallList(call: Command, api: () => AdminClient): void {
  const command = call.command('list').description('your calls (single and campaign ones), newest first');
  for (const [, flag, description] of FILTERS) command.option(`--${flag} <value>`, description);
  command
    .option('--limit <n>', 'at most this many per page (1 to 1000, default 100)', whole)
    .addOption(new Option('--json', 'print the calls and the next cursor as JSON'))
    .action(async (options: Filters & { limit?: number; json?: boolean }) => {
      const query = new URLSearchParams();
      for (const [name] of FILTERS) {
        const value = options[name];
        if (value !== undefined) query.set(name, value);
      }
      if (options.limit !== undefined) query.set('limit', String(options.limit));
      const reply = await api().exchange('GET', `/api/v1/calls?${query.toString()}`);
      const items = reply.body as unknown as CallListItem[];
      const cursor = reply.headers['x-next-cursor'];
      const nextCursor = typeof cursor === 'string' ? cursor : null;
      printResult({ calls: items, nextCursor }, options.json, () => {
        if (items.length === 0) return ['(no calls)'];
        const again = FILTERS.filter(([name]) => name !== 'cursor' && options[name] !== undefined).map(
          ([name, flag]) => `--${flag} ${options[name]}`,
        );
        if (options.limit !== undefined) again.push(`--limit ${options.limit}`);
        return [
          ...formatTable(
            ['CALL', 'CREATED', 'STATUS', 'NUMBER', 'CONTACT', 'DURATION', 'BATCH'],
            items.map((c) => [
              c.callId,
              shortDate(c.createdAt),
              c.status,
              c.phoneNumber,
              c.contactName.length > NAME_WIDTH
                ? `${c.contactName.slice(0, NAME_WIDTH - 1)}…`
                : c.contactName,
              c.duration === null ? '-' : `${c.duration} s`,
              c.batchId ?? '-',
            ]),
          ),
          ...(nextCursor
            ? [`More: outdial call list ${[...again, `--cursor ${nextCursor}`].join(' ')}`]
            : []),
        ];
      });
    });
}
