import fs from 'node:fs';
import { SingleBar } from 'cli-progress';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type PreflightReply, userOfApiKey } from '../client/index.js';
import type { BatchStatus } from '../domain/batch.js';
import { isFinalBatch } from '../domain/batch-lifecycle.js';
import { type BatchThrottle, throttleText } from '../domain/throttle.js';
import { AdminClient, AdminClientError } from './admin-client.js';
import { registerCallList } from './calls.js';
import { contactsFromCsv, csvCountry } from './csv.js';
import { printResult } from './output.js';
import { DEFAULT_COLUMNS, progressLine, summaryLines, type WatchFigures } from './watch.js';

/**
 * The campaign commands, clients of the public API with an API key: `outdial batch create|watch|
 * list|status|cancel|pause|resume` and `outdial call dial|list`.
 */

function integer(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** The body's retryStrategy from the flags given; none when none was, so the server's defaults apply. */
function retryStrategy(options: { maxAttempts?: number; retryOnVoicemail?: boolean }) {
  const strategy = {
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    ...(options.retryOnVoicemail ? { retryOnVoicemail: true } : {}),
  };
  return Object.keys(strategy).length === 0 ? {} : { retryStrategy: strategy };
}

/** The API key's user, for the body fields the API asks for. */
function userOfKey(key: string): string {
  try {
    return userOfApiKey(key);
  } catch {
    throw new AdminClientError(
      'that API key is malformed: create one with `outdial keys create --user <id>`',
    );
  }
}

export function registerCampaignCommands(program: Command): void {
  const api = (): { client: AdminClient; key: string } => {
    const options = program.opts<{ url?: string; apiKey?: string }>();
    const key = options.apiKey ?? process.env.OUTDIAL_API_KEY;
    if (!key) throw new AdminClientError('No API key: pass --api-key or set OUTDIAL_API_KEY');
    const url = options.url ?? process.env.OUTDIAL_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;
    return { client: new AdminClient(url, key), key };
  };
  const json = () => new Option('--json', 'print the raw JSON reply');

  const batch = program.command('batch').description('campaigns (with an API key)');
  batch
    .command('create')
    .description(
      'submit a campaign from a CSV file (header row: phoneNumber, name, email, company, any other column into metadata)',
    )
    .requiredOption('--agent <id>', 'the agent that makes the calls')
    .requiredOption('--csv <file>', 'the contacts')
    .option('--name <name>', 'campaign name')
    .option('--priority <n>', '1 (lowest) to 10', integer)
    .option('--rate <n>', 'maxCallsPerSecond, 1 to 30', integer)
    .option('--max-attempts <n>', 'attempts per contact, 1 to 5', integer)
    .option(
      '--retry-on-voicemail',
      'call a contact again after its call reached voicemail (by default its voicemail is left once)',
    )
    .option('--start <time>', 'scheduled start, ISO 8601 (read in --timezone when it has no offset)')
    .option('--timezone <tz>', 'IANA time zone, e.g. America/New_York')
    .option('--tag <tag>', 'a tag (repeat for more)', collect)
    .option(
      '--country <code>',
      "country of numbers written without +code (default: your account's defaultCountry, as the API reads them)",
    )
    .option(
      '--dry-run',
      "check the campaign with the server's preflight and print its report; nothing is created",
    )
    .addOption(json())
    .action(
      async (options: {
        agent: string;
        csv: string;
        name?: string;
        priority?: number;
        rate?: number;
        maxAttempts?: number;
        retryOnVoicemail?: boolean;
        start?: string;
        timezone?: string;
        tag?: string[];
        country?: string;
        dryRun?: boolean;
        json?: boolean;
      }) => {
        let text: string;
        try {
          text = fs.readFileSync(options.csv, 'utf8');
        } catch (error) {
          throw new AdminClientError(`cannot read ${options.csv}: ${(error as Error).message}`);
        }
        const { client, key } = api();
        const country = await csvCountry(options.country, () => client.get('/api/v1/account'));
        const { contacts, problems } = contactsFromCsv(text, country);
        for (const problem of problems)
          process.stderr.write(`${options.csv}:${problem.line}: ${problem.message} (not sent)\n`);
        if (contacts.length === 0)
          throw new AdminClientError(`${options.csv} has no contact that can be called`);
        const body = {
          agentId: options.agent,
          contacts,
          ...(options.name ? { name: options.name } : {}),
          options: {
            ...(options.priority === undefined ? {} : { priority: options.priority }),
            ...(options.rate === undefined ? {} : { maxCallsPerSecond: options.rate }),
            ...retryStrategy(options),
            ...(options.start ? { scheduledStartTime: options.start } : {}),
            ...(options.timezone ? { timezone: options.timezone } : {}),
            ...(options.tag ? { tags: options.tag } : {}),
          },
        };
        // --json prints the server's reply with the CSV rows that were not sent beside it, so a
        // script reading stdout learns all that the human lines (and stderr) say.
        const withRowsNotSent = (reply: Record<string, unknown>) => ({ ...reply, csvRowsNotSent: problems });
        if (options.dryRun) {
          // The server's preflight: every rule of a submission, nothing created.
          const report = await client.post('/api/v1/batch/preflight', { ...body, userId: userOfKey(key) });
          printResult(withRowsNotSent(report), options.json, (r) => preflightLines(r, problems.length));
          return;
        }
        const reply = await client.post('/api/v1/batch', { ...body, userId: userOfKey(key) });
        printResult(withRowsNotSent(reply), options.json, (r) => [
          `Batch ${r.batchId} accepted: ${contacts.length} contacts sent, ${problems.length} row${problems.length === 1 ? '' : 's'} skipped`,
          String(r.message ?? ''),
          `Follow it: outdial batch watch ${r.batchId}`,
        ]);
      },
    );

  batch
    .command('watch <batchId>')
    .description('a live progress bar until the campaign ends')
    .option('--every <ms>', 'milliseconds between reads', integer, 1000)
    .action(async (batchId: string, options: { every: number }) => {
      const { client } = api();
      const read = () =>
        client.get(`/api/v1/batch/check-status?batchId=${encodeURIComponent(batchId)}&limit=0`) as Promise<{
          status: BatchStatus;
          statistics: { total: number; processed: number; succeeded: number; failed: number };
          performance: { callsPerSecond: number };
        }>;
      let status = await read();
      const figures = (): WatchFigures => ({
        status: status.status,
        total: status.statistics.total,
        processed: status.statistics.processed,
        succeeded: status.statistics.succeeded,
        failed: status.statistics.failed,
        callsPerSecond: status.performance.callsPerSecond,
      });
      // The bar goes to stderr (stdout keeps the lines a script reads); a terminal gives its width
      // at each redraw, so a resized window is followed; a log gets 80-column lines.
      const stream = process.stderr;
      const tty = stream.isTTY === true;
      const bar = new SingleBar({
        stream,
        format: () => progressLine(figures(), (tty && stream.columns) || DEFAULT_COLUMNS),
        hideCursor: true,
        noTTYOutput: !tty,
        notTTYSchedule: 2000,
      });
      process.stdout.write(`Watching ${batchId} (Ctrl-C leaves the campaign running)\n`);
      bar.start(Math.max(status.statistics.total, 1), status.statistics.processed);
      while (!isFinalBatch(status.status)) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(options.every, 100)));
        status = await read();
        bar.setTotal(Math.max(status.statistics.total, 1));
        bar.update(status.statistics.processed);
      }
      bar.stop();
      process.stdout.write(`${summaryLines(batchId, figures()).join('\n')}\n`);
      if (status.status === 'failed') process.exitCode = 1;
    });

  batch
    .command('list')
    .description('your campaigns, newest first')
    .option('--status <status>', 'only this status')
    .option('--tag <tag>', 'only this tag')
    .option('--limit <n>', 'at most this many', integer)
    .addOption(json())
    .action(async (options: { status?: string; tag?: string; limit?: number; json?: boolean }) => {
      const query = new URLSearchParams();
      if (options.status) query.set('status', options.status);
      if (options.tag) query.set('tag', options.tag);
      if (options.limit) query.set('limit', String(options.limit));
      const items = (await api().client.get(`/api/v1/batch/list?${query.toString()}`)) as unknown as Array<
        Record<string, unknown>
      >;
      printResult({ batches: items }, options.json, () =>
        items.map((b) => `${b.batchId}  ${String(b.status).padEnd(10)} ${b.processed}/${b.total}  ${b.name}`),
      );
    });

  batch
    .command('status <batchId>')
    .description("a campaign's statistics")
    .addOption(json())
    .action(async (batchId: string, options: { json?: boolean }) => {
      const reply = await api().client.get(
        `/api/v1/batch/check-status?batchId=${encodeURIComponent(batchId)}`,
      );
      printResult(reply, options.json, (r) => {
        const s = r.statistics as Record<string, number>;
        const p = r.performance as Record<string, number>;
        return [
          `${r.batchId} (${r.name}): ${r.status}`,
          `  ${s.processed}/${s.total} processed (${s.percentComplete}%), ${s.succeeded} succeeded, ${s.failed} failed, ${s.pending} pending`,
          `  ${p.effectiveCallsPerSecond} calls/s now; throttled: ${throttleText(r.throttle as BatchThrottle | null)}`,
        ];
      });
    });

  batch
    .command('cancel <batchId>')
    .description('cancel a campaign that has not finished')
    .addOption(json())
    .action(async (batchId: string, options: { json?: boolean }) => {
      const reply = await api().client.post(
        `/api/v1/batch/cancel?batchId=${encodeURIComponent(batchId)}`,
        {},
      );
      printResult(reply, options.json, (r) => [String(r.message)]);
    });

  for (const [action, description] of [
    ['pause', 'pause a campaign: no new call starts; calls already up finish'],
    ['resume', 'resume a paused campaign where it stopped'],
  ] as const) {
    batch
      .command(`${action} <batchId>`)
      .description(description)
      .addOption(json())
      .action(async (batchId: string, options: { json?: boolean }) => {
        const reply = await api().client.post(
          `/api/v1/batch/${action}?batchId=${encodeURIComponent(batchId)}`,
          {},
        );
        printResult(reply, options.json, (r) => [`${String(r.message)} (${String(r.status)})`]);
      });
  }

  const call = program.command('call').description('single calls (with an API key)');
  call
    .command('dial')
    .description('start one call now')
    .requiredOption('--agent <id>', 'the agent')
    .requiredOption('--to <number>', "phone number: E.164, or national in your account's defaultCountry")
    .option('--name <name>', "the contact's name")
    .addOption(json())
    .action(async (options: { agent: string; to: string; name?: string; json?: boolean }) => {
      const reply = await api().client.post('/api/v1/call/dial', {
        to: options.to,
        agentConfigId: options.agent,
        ...(options.name ? { callerDetails: { name: options.name } } : {}),
      });
      printResult(reply, options.json, (r) => [`Call ${r.callId} started (${r.status})`]);
    });
  registerCallList(call, () => api().client);
}

/** Invalid contacts listed by `batch create --dry-run`; the rest are counted (--json has them all). */
const INVALID_SHOWN = 20;

/** The preflight report in a few lines: the counts, the first invalid contacts, and the verdict. */
function preflightLines(reply: Record<string, unknown>, skippedRows: number): string[] {
  const r = reply as unknown as PreflightReply;
  const lines = [
    `Preflight (nothing created): ${r.total} contact${r.total === 1 ? '' : 's'} sent, ${r.valid} valid, ${r.invalid.length} invalid, ${r.duplicates} duplicate${r.duplicates === 1 ? '' : 's'}${skippedRows > 0 ? `; ${skippedRows} CSV row${skippedRows === 1 ? '' : 's'} not sent` : ''}`,
    `  suppressed: ${r.suppressed}, without consent: ${r.withoutConsent}, outside their calling window now: ${r.outsideWindowNow}`,
    `  minutes: ${r.estimatedMinutes} estimated, ${r.availableMinutes} available`,
  ];
  for (const contact of r.invalid.slice(0, INVALID_SHOWN))
    lines.push(`  invalid: ${contact.phoneNumber ?? '(no number)'}: ${contact.reason}`);
  if (r.invalid.length > INVALID_SHOWN)
    lines.push(`  ... and ${r.invalid.length - INVALID_SHOWN} more invalid (--json lists them all)`);
  lines.push(
    r.wouldBeAccepted
      ? 'Would be accepted: yes'
      : `Would be accepted: no: ${r.refusal ? `${r.refusal.status} ${r.refusal.error}${r.refusal.message ? `: ${r.refusal.message}` : ''}` : 'refused'}`,
  );
  return lines;
}
