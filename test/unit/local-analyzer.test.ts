import { describe, expect, it } from 'vitest';
import { LocalAnalyzer } from '../../src/adapters/analysis/local.js';
import { metricSchemaFor } from '../../src/domain/analysis.js';
import { evaluateAnalyzer, loadLabelledTranscripts } from '../fixtures/analysis/evaluate.js';

const analyzer = new LocalAnalyzer();
const off = { enabled: false, customMetrics: [] };
const say = (...turns: string[]) =>
  turns.map((content, index) => ({
    role: index % 2 === 0 ? ('assistant' as const) : ('user' as const),
    content,
  }));

describe('local analyzer', () => {
  it('reaches 80% intent accuracy on the labelled transcriptions', async () => {
    const report = await evaluateAnalyzer(analyzer, loadLabelledTranscripts('transcripts'));
    expect(report.total).toBeGreaterThanOrEqual(60);
    expect(report.intentAccuracy).toBeGreaterThanOrEqual(0.8);
  });

  it('reaches 80% on the held-out transcriptions it was never tuned on', async () => {
    const report = await evaluateAnalyzer(analyzer, loadLabelledTranscripts('holdout'));
    expect(report.total).toBe(35);
    expect(report.intentAccuracy).toBeGreaterThanOrEqual(0.8);
  });

  it('reads removal requests over everything else, and quotes the contact in the summary', async () => {
    const result = await analyzer.analyze({
      transcription: say(
        'Hi, this is Ava from Brightline. Do you have a minute?',
        "Sure, it sounds interesting but honestly, take me off your list. I've had four calls this week.",
      ),
      metricConfig: off,
    });
    expect(result.metricJson.intent).toBe('do_not_call');
    expect(result.metricJson.sentiment).not.toBe('positive');
    expect(result.metricJson.customerSatisfaction).toBeLessThanOrEqual(2);
    expect(result.summary).toContain('asked not to be called again');
    expect(result.summary).toContain('take me off your list');
  });

  it('lets the last word count: objections first, agreement at the end is interest', async () => {
    const result = await analyzer.analyze({
      transcription: say(
        'Could I tell you about our scheduling tool?',
        "We don't really need another tool, we have a spreadsheet.",
        'Many teams save five hours a week with it. A 20-minute demo on Thursday?',
        'Hm, five hours would matter. Okay, book the demo for Thursday at 2 pm.',
      ),
      metricConfig: off,
    });
    expect(result.metricJson.intent).toBe('interested');
    expect(result.metricJson.keyPoints).toEqual(
      expect.arrayContaining([
        expect.stringContaining('book the demo'),
        expect.stringMatching(/Mentioned (date|time)/),
      ]),
    );
  });

  it('takes a VOICEMAIL status as settled, and a silent call as other', async () => {
    const voicemail = await analyzer.analyze({
      transcription: say('Hello, this is Ava calling back.', 'Hi!'),
      metricConfig: off,
      callStatus: 'VOICEMAIL',
    });
    expect(voicemail.metricJson).toMatchObject({ intent: 'voicemail', sentiment: 'neutral' });
    const silent = await analyzer.analyze({
      transcription: say('Hello? Is anyone there?'),
      metricConfig: off,
    });
    expect(silent.metricJson.intent).toBe('other');
    expect(silent.summary).toContain('said nothing');
  });

  it('fills custom metrics from what the contact said, null when the call does not tell, and fits the schema', async () => {
    const config = {
      enabled: true,
      customMetrics: [
        { name: 'plan', type: 'enum' as const, options: ['Basic', 'Pro', 'Enterprise'] },
        { name: 'seats', type: 'number' as const, description: 'How many seats the team needs' },
        { name: 'hasBudget', type: 'boolean' as const, description: 'Is there budget approved' },
        { name: 'competitor', type: 'string' as const, description: 'Which competitor they use now' },
      ],
    };
    const result = await analyzer.analyze({
      transcription: say(
        'Which plan are you looking at?',
        'Probably Pro. We need seats for 12 people.',
        'Is the budget approved?',
        'Not yet, the budget is not approved until next quarter.',
      ),
      metricConfig: config,
    });
    expect(result.customMetricsProcessed).toBe(4);
    expect(result.metricJson).toMatchObject({ plan: 'Pro', seats: 12, hasBudget: false, competitor: null });
    const schema = metricSchemaFor(config) as { required: string[]; properties: Record<string, unknown> };
    expect(schema.required).toEqual([
      'intent',
      'sentiment',
      'confidence',
      'keyPoints',
      'customerSatisfaction',
      'plan',
      'seats',
      'hasBudget',
      'competitor',
    ]);
    expect(schema.properties.seats).toEqual({
      type: ['number', 'null'],
      description: 'How many seats the team needs',
    });
  });

  it('ignores custom metrics while the agent has them switched off', async () => {
    const result = await analyzer.analyze({
      transcription: say('Hi', 'Yes, sign me up for Pro.'),
      metricConfig: { enabled: false, customMetrics: [{ name: 'plan', type: 'enum', options: ['Pro'] }] },
    });
    expect(result.customMetricsProcessed).toBe(0);
    expect(result.metricJson).not.toHaveProperty('plan');
  });
});
