import fs from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type CountryCode, normalizePhone } from '../domain/phone.js';
import { AdminClient, AdminClientError } from './admin-client.js';
import { type CsvProblem, csvCountry, PHONE_HEADERS, parseCsv } from './csv.js';
import { printResult } from './output.js';

/** Requests in flight during an import: enough to add 10,000 numbers in seconds, few enough for one API process. */
const IMPORT_CONCURRENCY = 8;

export interface SuppressionLine {
  line: number;
  phoneNumber: string;
  reason?: string;
}

/**
 * The numbers of a suppression CSV: a header row with a phone number column (phoneNumber, phone,
 * ...) and an optional `reason` column; other columns are ignored. Numbers are normalised to E.164
 * (`country` for numbers written without a country code); unusable lines are problems.
 */
export function suppressionsFromCsv(
  text: string,
  country: CountryCode,
): { entries: SuppressionLine[]; problems: CsvProblem[] } {
  const [header, ...rows] = parseCsv(text);
  if (!header) return { entries: [], problems: [{ line: 1, message: 'the file is empty' }] };
  const names = header.cells.map((cell) => cell.trim().toLowerCase());
  const phoneColumn = names.findIndex((name) => PHONE_HEADERS.includes(name));
  if (phoneColumn < 0) {
    return {
      entries: [],
      problems: [
        { line: 1, message: `no phone number column: the header needs one of ${PHONE_HEADERS.join(', ')}` },
      ],
    };
  }
  const reasonColumn = names.indexOf('reason');
  const entries: SuppressionLine[] = [];
  const problems: CsvProblem[] = [];
  for (const row of rows) {
    const reading = normalizePhone(row.cells[phoneColumn] ?? '', country);
    if (!reading.ok) {
      problems.push({ line: row.line, message: reading.reason });
      continue;
    }
    const reason = reasonColumn >= 0 ? (row.cells[reasonColumn]?.trim() ?? '') : '';
    if (reason.length > 500) {
      problems.push({ line: row.line, message: 'the reason is longer than 500 characters' });
      continue;
    }
    entries.push({ line: row.line, phoneNumber: reading.number, ...(reason ? { reason } : {}) });
  }
  return { entries, problems };
}

/** `outdial suppressions import|list|add|remove`: the user's do-not-call list, with an API key. */
export function registerSuppressionCommands(program: Command): void {
  const api = (): AdminClient => {
    const options = program.opts<{ url?: string; apiKey?: string }>();
    const key = options.apiKey ?? process.env.OUTDIAL_API_KEY;
    if (!key) throw new AdminClientError('No API key: pass --api-key or set OUTDIAL_API_KEY');
    const url = options.url ?? process.env.OUTDIAL_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;
    return new AdminClient(url, key);
  };
  const json = () => new Option('--json', 'print the raw JSON reply');
  const path = (phoneNumber: string) => `/api/v1/suppressions/${encodeURIComponent(phoneNumber)}`;

  const suppressions = program
    .command('suppressions')
    .description(
      'numbers never to call: refused at dial time and never dialed in a campaign (with an API key)',
    );

  suppressions
    .command('import <file>')
    .description('add the numbers of a CSV file (header row: phoneNumber, optional reason)')
    .option(
      '--country <code>',
      "country of numbers written without +code (default: your account's defaultCountry, as the API reads them)",
    )
    .action(async (file: string, options: { country?: string }) => {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (error) {
        throw new AdminClientError(`cannot read ${file}: ${(error as Error).message}`);
      }
      const client = api();
      const country = await csvCountry(options.country, () => client.get('/api/v1/account'));
      const { entries, problems } = suppressionsFromCsv(text, country);
      let added = 0;
      let already = 0;
      let next = 0;
      const worker = async () => {
        while (next < entries.length) {
          const entry = entries[next++] as SuppressionLine;
          try {
            const reply = await client.exchange('POST', '/api/v1/suppressions', {
              phoneNumber: entry.phoneNumber,
              ...(entry.reason ? { reason: entry.reason } : {}),
            });
            if (reply.status === 201) added++;
            else already++;
          } catch (error) {
            // The server's refusal of one line (a number it does not accept) is that line's problem;
            // anything else (the server is gone, the key is wrong) ends the import.
            if (error instanceof AdminClientError && /^400 /.test(error.message)) {
              problems.push({ line: entry.line, message: error.message });
            } else {
              throw error;
            }
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(IMPORT_CONCURRENCY, entries.length) }, worker));
      problems.sort((a, b) => a.line - b.line);
      for (const problem of problems)
        process.stderr.write(`${file}:${problem.line}: ${problem.message} (not added)\n`);
      process.stdout.write(
        `${added} added, ${already} already on the list, ${problems.length} invalid line${problems.length === 1 ? '' : 's'}\n`,
      );
      if (entries.length === 0 && problems.length > 0) process.exitCode = 1;
    });

  suppressions
    .command('list')
    .description('the list, newest first')
    .option('--limit <n>', 'at most this many per page (1 to 1000)', (value: string) => {
      if (!/^\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
      return Number(value);
    })
    .option('--cursor <cursor>', 'the page after this cursor (printed under a full page)')
    .addOption(json())
    .action(async (options: { limit?: number; cursor?: string; json?: boolean }) => {
      const query = new URLSearchParams();
      if (options.limit) query.set('limit', String(options.limit));
      if (options.cursor) query.set('cursor', options.cursor);
      const reply = await api().exchange('GET', `/api/v1/suppressions?${query.toString()}`);
      const items = reply.body as unknown as Array<Record<string, unknown>>;
      const cursor = reply.headers['x-next-cursor'];
      printResult({ suppressions: items, nextCursor: cursor ?? null }, options.json, () => [
        ...items.map(
          (s) =>
            `${String(s.phoneNumber).padEnd(16)} ${String(s.createdAt)}  ${s.reason ?? ''}${s.sourceCallId ? ` (call ${s.sourceCallId})` : ''}`,
        ),
        ...(cursor ? [`More: outdial suppressions list --cursor ${String(cursor)}`] : []),
      ]);
    });

  suppressions
    .command('add <phoneNumber>')
    .description(
      "add one number: E.164, or national in your account's defaultCountry (the server reads it, as for import)",
    )
    .option('--reason <text>', 'why')
    .addOption(json())
    .action(async (phoneNumber: string, options: { reason?: string; json?: boolean }) => {
      const reply = await api().exchange('POST', '/api/v1/suppressions', {
        phoneNumber,
        ...(options.reason ? { reason: options.reason } : {}),
      });
      printResult(reply.body, options.json, (s) => [
        reply.status === 201
          ? `Added ${String(s.phoneNumber)} to the suppression list`
          : `${String(s.phoneNumber)} was already on the suppression list (since ${String(s.createdAt)})`,
      ]);
    });

  suppressions
    .command('remove <phoneNumber>')
    .description('remove one number (read as add reads it): it may be called again')
    .action(async (phoneNumber: string) => {
      await api().exchange('DELETE', path(phoneNumber));
      process.stdout.write(`Removed ${phoneNumber} from the suppression list\n`);
    });
}
