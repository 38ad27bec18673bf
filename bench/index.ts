import { benchAgent } from './agent.js';
import { benchCompliance } from './compliance.js';
import { benchDispatch } from './dispatch.js';
import { benchFirstStart } from './first-start.js';
import { benchIngest } from './ingest.js';
import { benchMedia } from './media.js';
import { benchNpmStart } from './npm-start.js';
import { benchReads } from './reads.js';
import { benchReadsStart } from './reads-start.js';
import { benchVad } from './vad.js';
import { benchWebhooks } from './webhooks.js';

/**
 * `npm run bench [scenario...]`: ingest-postgres, ingest-pglite, dispatch-postgres, dispatch-pglite,
 * webhooks-postgres, webhooks-pglite, reads-postgres, reads-pglite, reads-start, media, first-start,
 * npm-start, vad, agent, compliance (all by default). Each scenario prints its measurements beside its baseline, as ratios.
 */
const scenarios: Record<string, () => Promise<void>> = {
  'ingest-postgres': () => benchIngest('postgres'),
  'ingest-pglite': () => benchIngest('pglite'),
  'dispatch-postgres': () => benchDispatch('postgres'),
  'dispatch-pglite': () => benchDispatch('pglite'),
  'webhooks-postgres': () => benchWebhooks('postgres'),
  'webhooks-pglite': () => benchWebhooks('pglite'),
  'reads-postgres': () => benchReads('postgres'),
  'reads-pglite': () => benchReads('pglite'),
  'reads-start': () => benchReadsStart(),
  media: () => benchMedia(),
  'first-start': () => benchFirstStart(),
  'npm-start': () => benchNpmStart(),
  vad: () => benchVad(),
  agent: () => benchAgent(),
  compliance: () => benchCompliance(),
};

const wanted = process.argv.slice(2);
for (const name of wanted.length > 0 ? wanted : Object.keys(scenarios)) {
  const run = scenarios[name];
  if (!run) {
    process.stderr.write(`unknown scenario ${name}; choose from ${Object.keys(scenarios).join(', ')}\n`);
    process.exit(2);
  }
  await run();
}
process.exit(0);
