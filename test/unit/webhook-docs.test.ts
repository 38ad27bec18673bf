import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { metricSchemaFor, toMetricConfig } from '../../src/domain/analysis.js';
import { WEBHOOK_EVENTS } from '../../src/domain/webhooks.js';

/** docs/webhooks.md shows what receivers get; this keeps its metricSchema the one outdial sends. */
describe('docs/webhooks.md', () => {
  const doc = fs.readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');

  it('shows the real metricSchema of an agent without custom metrics', () => {
    const marker = doc.indexOf('<!-- metricSchema of an agent without custom metrics');
    expect(marker).toBeGreaterThan(-1);
    const block = /```json\n([\s\S]*?)\n```/.exec(doc.slice(marker));
    expect(block?.[1]).toBeDefined();
    expect(JSON.parse(block?.[1] ?? '')).toEqual(metricSchemaFor(toMetricConfig({})));
  });

  it('names every event outdial sends', () => {
    for (const event of WEBHOOK_EVENTS) expect(doc, event).toContain(`\`${event}\``);
  });
});
