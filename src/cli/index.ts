#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, loadConfig } from '../config.js';
import { readAdminTokenFile } from '../services/secrets.js';
import { AdminClient, AdminClientError } from './admin-client.js';
import { type AiFlags, applyAiFlags, withAiFlags } from './agents.js';
import { registerCampaignCommands } from './campaigns.js';
import { printResult } from './output.js';
import { StartFailure, unexpectedErrorText } from './start-failure.js';

/**
 * The server's modules (the database, the HTTP app, the workers, the voice stack) load only for the
 * commands that run it: a client command such as `outdial batch status` starts in a fraction of
 * the time, which matters to scripts that call it in a loop.
 */
const serverModule = () => import('./server.js');
/** `outdial doctor` loads the model clients, SIP and the database the same way: only when run. */
const doctorModule = () => import('./doctor.js');

import { registerSuppressionCommands } from './suppressions.js';

const program = new Command();
program
  .name('outdial')
  .description('Self-hostable AI outbound calls: run the service, and manage users, agents and API keys')
  .showHelpAfterError()
  .option('--url <url>', 'address of a running outdial (OUTDIAL_URL)')
  .option('--admin-token <token>', 'admin token (OUTDIAL_ADMIN_TOKEN, or the one generated in the data dir)')
  .option('--api-key <key>', 'API key, for the batch and call commands (OUTDIAL_API_KEY)');

program
  .command('serve')
  .description('run the API and the workers in one process (what npm start runs)')
  .action(async () => (await serverModule()).runServer('serve'));
program
  .command('api')
  .description('run only the HTTP API')
  .action(async () => (await serverModule()).runServer('api'));
program
  .command('worker')
  .description('run only the background workers (any number of them may share one PostgreSQL and Redis)')
  .action(async () => (await serverModule()).runServer('worker'));
program
  .command('migrate')
  .description('apply the database migrations and exit')
  .action(async () => (await serverModule()).runMigrate());

program
  .command('doctor')
  .description(
    'check this deployment: database, cache, models, speech, trunks, public URL, webhooks, disk (exit 1 when a check fails)',
  )
  .option('--json', 'print the report as JSON')
  .option(
    '--webhook-url <url>',
    'check that webhooks reach this URL (default: those used in the last 7 days)',
  )
  .option('--timeout <ms>', 'milliseconds each check may take (default 5000)', integer)
  .action(async (options: { json?: boolean; webhookUrl?: string; timeout?: number }) => {
    const code = await (await doctorModule()).runDoctor(options);
    // A check's client may keep a socket for a moment (a kept-alive connection): the report is out.
    process.exit(code);
  });

function client(): AdminClient {
  const options = program.opts<{ url?: string; adminToken?: string }>();
  const config = loadConfig();
  const url = options.url ?? process.env.OUTDIAL_URL ?? `http://127.0.0.1:${config.port}`;
  const token = options.adminToken ?? config.adminToken ?? readAdminTokenFile(config.dataDir);
  if (!token) {
    throw new AdminClientError(
      `No admin token: pass --admin-token, set OUTDIAL_ADMIN_TOKEN, or run from the folder whose ${config.dataDir} holds admin-token`,
    );
  }
  return new AdminClient(url, token);
}

const jsonOption = () => new Option('--json', 'print the raw JSON reply');

/** The voice flags of `agents create` and `agents update` as basicDetails keys. */
function voiceDetails(options: {
  agentName?: string;
  language?: string;
  voice?: string;
}): Record<string, unknown> {
  return {
    ...(options.agentName ? { agent_name: options.agentName } : {}),
    ...(options.language ? { agentLanguage: options.language } : {}),
    ...(options.voice ? { voiceId: options.voice } : {}),
  };
}

function integer(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
}

const users = program.command('users').description('users of the service');
users
  .command('create')
  .description('create a user')
  .requiredOption('--name <name>', 'display name')
  .option('--email <email>', 'email address')
  .option('--minutes <n>', 'call minutes to start with', integer)
  .option('--max-concurrent-calls <n>', 'most calls in progress at once (default 200)', integer)
  .option(
    '--default-country <code>',
    "country (ISO 3166-1 alpha-2) of the user's numbers written without +code (default: OUTDIAL_DEFAULT_COUNTRY)",
  )
  .addOption(jsonOption())
  .action(
    async (options: {
      name: string;
      email?: string;
      minutes?: number;
      maxConcurrentCalls?: number;
      defaultCountry?: string;
      json?: boolean;
    }) => {
      const { json, ...body } = options;
      printResult(await client().post('/admin/v1/users', body), json, (user) => [
        `Created user ${user.id} (${user.name}) with ${user.availableMinutes} minutes, at most ${user.maxConcurrentCalls} calls at once`,
      ]);
    },
  );
users
  .command('list')
  .description('every user, newest first, a page at a time')
  .option('--limit <n>', 'at most this many per page (1 to 1000, default 100)', integer)
  .option('--cursor <cursor>', 'the page after this cursor (printed under a full page)')
  .addOption(jsonOption())
  .action(async (options: { limit?: number; cursor?: string; json?: boolean }) => {
    const query = new URLSearchParams();
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    if (options.cursor) query.set('cursor', options.cursor);
    const reply = await client().exchange('GET', `/admin/v1/users?${query.toString()}`);
    const listed = reply.body.users as Array<Record<string, unknown>>;
    const cursor = reply.headers['x-next-cursor'];
    printResult({ users: listed, nextCursor: cursor ?? null }, options.json, () => [
      ...listed.map(
        (u) =>
          `${u.id}  ${String(u.availableMinutes).padStart(6)} min  max ${String(u.maxConcurrentCalls).padStart(3)} calls  ${u.name}${u.email ? ` <${u.email}>` : ''}`,
      ),
      ...(cursor ? [`More: outdial users list --cursor ${String(cursor)}`] : []),
    ]);
  });
users
  .command('update <userId>')
  .description('change a user (minutes change with `credits add`)')
  .option('--name <name>', 'display name')
  .option('--email <email>', 'email address')
  .option('--max-concurrent-calls <n>', 'most calls in progress at once', integer)
  .option(
    '--default-country <code>',
    "country (ISO 3166-1 alpha-2) of the user's numbers written without +code; 'none': OUTDIAL_DEFAULT_COUNTRY",
  )
  .addOption(jsonOption())
  .action(
    async (
      userId: string,
      options: {
        name?: string;
        email?: string;
        maxConcurrentCalls?: number;
        defaultCountry?: string;
        json?: boolean;
      },
    ) => {
      const { json, defaultCountry, ...rest } = options;
      const body = {
        ...rest,
        ...(defaultCountry === undefined
          ? {}
          : { defaultCountry: defaultCountry.toLowerCase() === 'none' ? null : defaultCountry }),
      };
      printResult(
        await client().patch(`/admin/v1/users/${encodeURIComponent(userId)}`, body),
        json,
        (user) => [
          `Updated user ${user.id} (${user.name}): at most ${user.maxConcurrentCalls} calls at once`,
        ],
      );
    },
  );

const credits = program.command('credits').description('call minutes');
credits
  .command('add')
  .description('add call minutes to a user (a negative number takes them back)')
  .argument('<userId>', 'the user')
  .argument('<minutes>', 'minutes to add', integer)
  .addOption(jsonOption())
  .action(async (userId: string, minutes: number, options: { json?: boolean }) => {
    printResult(
      await client().post(`/admin/v1/users/${encodeURIComponent(userId)}/credits`, { minutes }),
      options.json,
      (r) => [`${userId} now has ${r.availableMinutes} minutes`],
    );
  });

const agents = program.command('agents').description('AI voice agents');
withAiFlags(
  agents
    .command('create')
    .description('create an agent for a user')
    .requiredOption('--user <userId>', 'owner')
    .requiredOption('--name <name>', 'agent name')
    .option('--agent-name <name>', 'the name the agent introduces itself with')
    .option('--language <code>', 'agentLanguage, e.g. en')
    .option('--voice <id>', 'voiceId')
    .option('--type <type>', 'OUTBOUND or INBOUND', 'OUTBOUND')
    .option('--inactive', 'create it deactivated')
    .option('--sip-trunk <id>', 'SIP trunk id'),
)
  .addOption(jsonOption())
  .action(
    async (
      options: AiFlags & {
        user: string;
        name: string;
        agentName?: string;
        language?: string;
        voice?: string;
        type: string;
        inactive?: boolean;
        sipTrunk?: string;
        json?: boolean;
      },
    ) => {
      const basicDetails = applyAiFlags(voiceDetails(options), options);
      const body = {
        userId: options.user,
        name: options.name,
        type: options.type.toUpperCase(),
        isActive: !options.inactive,
        basicDetails,
        ...(options.sipTrunk ? { sipTrunkId: options.sipTrunk } : {}),
      };
      printResult(await client().post('/admin/v1/agents', body), options.json, (agent) => [
        `Created agent ${agent.id} (${agent.name}) for ${agent.userId}`,
      ]);
    },
  );
withAiFlags(
  agents
    .command('update')
    .description("change an agent's name, voice or AI settings (the flags given; the rest stays)")
    .argument('<agentId>', 'the agent')
    .option('--name <name>', 'agent name')
    .option('--agent-name <name>', 'the name the agent introduces itself with')
    .option('--language <code>', 'agentLanguage, e.g. en')
    .option('--voice <id>', 'voiceId'),
)
  .addOption(jsonOption())
  .action(
    async (
      agentId: string,
      options: AiFlags & {
        name?: string;
        agentName?: string;
        language?: string;
        voice?: string;
        json?: boolean;
      },
    ) => {
      const admin = client();
      const path = `/admin/v1/agents/${encodeURIComponent(agentId)}`;
      const current = (await admin.get(path)).basicDetails as Record<string, unknown>;
      const basicDetails = applyAiFlags({ ...current, ...voiceDetails(options) }, options);
      const body = { ...(options.name ? { name: options.name } : {}), basicDetails };
      printResult(await admin.patch(path, body), options.json, (agent) => [
        `Updated agent ${agent.id} (${agent.name})`,
      ]);
    },
  );
agents
  .command('list')
  .description("a user's agents")
  .requiredOption('--user <userId>', 'owner')
  .addOption(jsonOption())
  .action(async (options: { user: string; json?: boolean }) => {
    const reply = await client().get(`/admin/v1/agents?userId=${encodeURIComponent(options.user)}`);
    printResult(reply, options.json, (r) =>
      (r.agents as Array<Record<string, unknown>>).map(
        (a) => `${a.id}  ${a.isActive ? 'active  ' : 'inactive'}  ${a.type}  ${a.name}`,
      ),
    );
  });
agents
  .command('deactivate')
  .description('deactivate an agent (new calls and batches refuse it)')
  .argument('<agentId>', 'the agent')
  .addOption(jsonOption())
  .action(async (agentId: string, options: { json?: boolean }) => {
    printResult(
      await client().patch(`/admin/v1/agents/${encodeURIComponent(agentId)}`, { isActive: false }),
      options.json,
      (a) => [`Deactivated agent ${a.id} (${a.name})`],
    );
  });

const keys = program.command('keys').description('API keys');
keys
  .command('create')
  .description('create an API key (shown only once)')
  .requiredOption('--user <userId>', 'owner')
  .option('--name <name>', 'a label for the key')
  .option('--expires <date-time>', 'expiry, ISO 8601 (e.g. 2027-01-01T00:00:00Z)')
  .addOption(jsonOption())
  .action(async (options: { user: string; name?: string; expires?: string; json?: boolean }) => {
    const body = {
      userId: options.user,
      ...(options.name ? { name: options.name } : {}),
      ...(options.expires ? { expiresAt: options.expires } : {}),
    };
    printResult(await client().post('/admin/v1/keys', body), options.json, (k) => [
      `Created key ${k.id}. Store it now; it is not shown again:`,
      String(k.key),
    ]);
  });
keys
  .command('list')
  .description("a user's API keys (never the secret)")
  .requiredOption('--user <userId>', 'owner')
  .addOption(jsonOption())
  .action(async (options: { user: string; json?: boolean }) => {
    const reply = await client().get(`/admin/v1/keys?userId=${encodeURIComponent(options.user)}`);
    printResult(reply, options.json, (r) =>
      (r.keys as Array<Record<string, unknown>>).map(
        (k) =>
          `${k.id}  ${String(k.status).padEnd(7)}  expires ${k.expiresAt ?? 'never'}  last used ${k.lastUsedAt ?? 'never'}  ${k.name}`,
      ),
    );
  });
keys
  .command('revoke')
  .description('revoke an API key')
  .argument('<keyId>', 'the key')
  .addOption(jsonOption())
  .action(async (keyId: string, options: { json?: boolean }) => {
    printResult(await client().delete(`/admin/v1/keys/${encodeURIComponent(keyId)}`), options.json, (k) => [
      `Revoked key ${k.id} (${k.name})`,
    ]);
  });

const secret = program.command('webhook-secret').description("a user's webhook signing secret");
secret
  .command('show')
  .argument('<userId>', 'the user')
  .addOption(jsonOption())
  .action(async (userId: string, options: { json?: boolean }) => {
    printResult(
      await client().get(`/admin/v1/users/${encodeURIComponent(userId)}/webhook-secret`),
      options.json,
      (s) => [String(s.secret)],
    );
  });
secret
  .command('rotate')
  .argument('<userId>', 'the user')
  .addOption(jsonOption())
  .action(async (userId: string, options: { json?: boolean }) => {
    printResult(
      await client().post(`/admin/v1/users/${encodeURIComponent(userId)}/webhook-secret/rotate`, {}),
      options.json,
      (s) => [String(s.secret), 'The previous secret keeps signing beside it for 24 hours.'],
    );
  });

const trunks = program.command('sip-trunks').description("a user's SIP trunks");
trunks
  .command('create')
  .description('add a SIP trunk (the password is stored encrypted and never shown again)')
  .requiredOption('--user <userId>', 'owner')
  .requiredOption('--name <name>', 'a label')
  .requiredOption('--host <host>', 'carrier or PBX host name or IP')
  .requiredOption('--from <number>', 'E.164 caller number')
  .option('--port <n>', 'SIP port (default 5060)', integer)
  .option('--username <name>', 'digest user name')
  .option('--password <password>', 'digest password')
  .option('--max-cps <n>', 'calls per second through this trunk', integer)
  .option('--max-concurrent <n>', 'calls up at once through this trunk', integer)
  .addOption(jsonOption())
  .action(
    async (options: {
      user: string;
      name: string;
      host: string;
      from: string;
      port?: number;
      username?: string;
      password?: string;
      maxCps?: number;
      maxConcurrent?: number;
      json?: boolean;
    }) => {
      const reply = await client().post('/admin/v1/sip-trunks', {
        userId: options.user,
        name: options.name,
        host: options.host,
        fromNumber: options.from,
        ...(options.port === undefined ? {} : { port: options.port }),
        ...(options.username ? { username: options.username } : {}),
        ...(options.password ? { password: options.password } : {}),
        ...(options.maxCps === undefined ? {} : { maxCallsPerSecond: options.maxCps }),
        ...(options.maxConcurrent === undefined ? {} : { maxConcurrentCalls: options.maxConcurrent }),
      });
      printResult(reply, options.json, (t) => [`Created SIP trunk ${t.id} (${t.name}, ${t.host}:${t.port})`]);
    },
  );
trunks
  .command('list')
  .description("a user's SIP trunks")
  .requiredOption('--user <userId>', 'owner')
  .addOption(jsonOption())
  .action(async (options: { user: string; json?: boolean }) => {
    const reply = await client().get(`/admin/v1/sip-trunks?userId=${encodeURIComponent(options.user)}`);
    printResult(reply, options.json, (r) =>
      (r.sipTrunks as Array<Record<string, unknown>>).map(
        (t) =>
          `${t.id}  ${t.name}  ${t.host}:${t.port}  from ${t.fromNumber}${t.hasPassword ? '  (password set)' : ''}`,
      ),
    );
  });
trunks
  .command('update <trunkId>')
  .description('change a SIP trunk')
  .option('--name <name>', 'a label')
  .option('--host <host>', 'host name or IP')
  .option('--port <n>', 'SIP port', integer)
  .option('--from <number>', 'E.164 caller number')
  .option('--password <password>', 'digest password')
  .addOption(jsonOption())
  .action(
    async (
      trunkId: string,
      options: {
        name?: string;
        host?: string;
        port?: number;
        from?: string;
        password?: string;
        json?: boolean;
      },
    ) => {
      const { json, from, ...rest } = options;
      const reply = await client().patch(`/admin/v1/sip-trunks/${encodeURIComponent(trunkId)}`, {
        ...rest,
        ...(from ? { fromNumber: from } : {}),
      });
      printResult(reply, json, (t) => [`Updated SIP trunk ${t.id}`]);
    },
  );
trunks
  .command('delete <trunkId>')
  .description('delete a SIP trunk no agent uses')
  .action(async (trunkId: string) => {
    await client().delete(`/admin/v1/sip-trunks/${encodeURIComponent(trunkId)}`);
    process.stdout.write(`Deleted SIP trunk ${trunkId}\n`);
  });

registerCampaignCommands(program);
registerSuppressionCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // A flag whose value is only checked once the command runs (a file that cannot be read).
  if (
    error instanceof AdminClientError ||
    error instanceof ConfigError ||
    error instanceof StartFailure ||
    error instanceof InvalidArgumentError
  ) {
    process.stderr.write(`outdial: ${error.message}\n`);
    process.exit(1);
  }
  // Anything else is a bug of ours: one line still, and the stack for whoever asks for it.
  let logLevel: string | undefined;
  try {
    logLevel = loadConfig().logLevel;
  } catch {}
  process.stderr.write(unexpectedErrorText(error, logLevel));
  process.exit(1);
}
