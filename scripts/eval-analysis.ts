import { LocalAnalyzer } from '../src/adapters/analysis/local.js';
import {
  evaluateAnalyzer,
  formatEvaluation,
  loadLabelledTranscripts,
} from '../test/fixtures/analysis/evaluate.js';

/** `npm run eval:analysis`: the local analyzer against the labelled transcriptions and the held-out set. */
const analyzer = new LocalAnalyzer();
const tuned = await evaluateAnalyzer(analyzer, loadLabelledTranscripts('transcripts'));
process.stdout.write(formatEvaluation(tuned, 'Labelled set (the cues were refined on it)'));
process.stdout.write('\n');
const holdout = await evaluateAnalyzer(analyzer, loadLabelledTranscripts('holdout'));
process.stdout.write(formatEvaluation(holdout, 'Held-out set (never used for tuning)'));
