import { evaluateAnalyzer, formatEvaluation, loadLabelledTranscripts } from '../test/fixtures/analysis/evaluate.js';
import { LocalAnalyzer } from '../src/adapters/analysis/local.js';

/** `npm run eval:analysis`: the local analyzer against the labelled transcriptions. */
const report = await evaluateAnalyzer(new LocalAnalyzer(), loadLabelledTranscripts());
process.stdout.write(formatEvaluation(report));
