import type { ItemSentence, WinkMethods } from 'wink-nlp';
import {
  type Analysis,
  type AnalysisInput,
  type Analyzer,
  activeCustomMetrics,
  type CustomMetric,
  cleanTranscript,
  type Intent,
  type MetricJson,
  type Sentiment,
} from '../../domain/analysis.js';
import type { TranscriptEntry } from '../../domain/call.js';

/**
 * The offline analyzer: wink-nlp (English) for sentences, sentiment and entities, and a weighted
 * phrase model for the intent. Cues are read in the contact's turns only (the agent's words say
 * nothing about what the contact wants), later turns weigh more (people change their mind as a
 * call goes on), and a stronger cue blanks out the words it used, so "not interested" never also
 * counts as "interested".
 */

interface Cue {
  intent: Exclude<Intent, 'other'>;
  weight: number;
  pattern: RegExp;
}

const cue = (intent: Cue['intent'], weight: number, pattern: RegExp): Cue => ({ intent, weight, pattern });

/** In the order they are read: a cue that matches removes its words before the next ones look. */
const CUES: Cue[] = [
  // Removal wins over everything: it is a legal matter, not a preference.
  cue('do_not_call', 6, /\b(stop|quit|cease)\s+(calling|ringing|phoning|contacting|bothering)\b/g),
  cue(
    'do_not_call',
    6,
    /\b(don'?t|do not|never|no more)\s+(ever\s+)?(call|calling|ring|ringing|phone|phoning|contact|contacting|bother|bothering)\s+(me|us|here|this (number|house|line|phone)|again|anymore|any more)\b/g,
  ),
  cue(
    'do_not_call',
    6,
    /\b((i'?d like|i want|i need|please)\s+(you\s+)?to\s+)?(be\s+)?removed?\s+(me\s+|us\s+)?from\s+(any|all|your|the|future|this)\b[^.]{0,30}/g,
  ),
  cue('do_not_call', 3, /\b(can'?t|don'?t want to)\s+keep\s+getting\b/g),
  cue(
    'do_not_call',
    6,
    /\b(take|remove|delete|scrub|drop|strike|get)\s+(me|us|my\s+(number|name|details|info)|this\s+number)\s+(off|from|out of)\b/g,
  ),
  cue('do_not_call', 6, /\b(do[\s-]not[\s-]call|dnc)\s+(list|registry|register)\b/g),
  cue('do_not_call', 5, /\b(put|add)\s+(me|us|this number)\s+on\s+(your|the|a)\s+\w*\s*(list|registry)\b/g),
  cue('do_not_call', 5, /\b(unsubscribe|opt\s?out|harass\w*)\b/g),
  cue('do_not_call', 4, /\b(lose|forget|delete)\s+(my|this)\s+number\b/g),
  cue(
    'do_not_call',
    4,
    /\b(asked|told)\s+(you|y'?all|your (people|company))\b.{0,40}\b(stop|not to call|quit)\b/g,
  ),
  cue('do_not_call', 4, /\b(report|sue)\s+(you|your company)\b/g),
  cue('do_not_call', 4, /\bnever\s+call\s+(here|me|this number)\s+again\b/g),
  cue('do_not_call', 3, /\b(don'?t|do not)\s+(ever\s+)?call\s+(me|here|this number|us)\b/g),

  cue('voicemail', 5, /\b(leave|record)\s+(a|your|me a)\s+(message|name|brief message)\b/g),
  cue('voicemail', 5, /\bafter\s+the\s+(tone|beep)\b/g),
  cue('voicemail', 5, /\b(voice\s?mail|mailbox|answering machine)\b/g),
  cue(
    'voicemail',
    4,
    /\b(the\s+)?(person|party|number|subscriber|customer)\s+you\s+(are|have|were)\s+(calling|called|dialed|trying|reached)\b/g,
  ),
  cue(
    'voicemail',
    4,
    /\b(can'?t|cannot|unable to)\s+(take|come to|get to|answer)\s+(your|the|this)\s+(call|phone)\b/g,
  ),
  cue('voicemail', 3, /\b(you'?ve|you have)\s+reached\b/g),
  cue('voicemail', 3, /\b(not available|unavailable|is not in service|has been disconnected)\b/g),
  cue('voicemail', 3, /\bpress\s+(one|two|\d|pound|star)\b/g),

  cue('wrong_number', 6, /\bwrong\s+(numb?e?r|person|guy|lady|house|line)\b/g),
  cue('wrong_number', 5, /\b(nobody|no one|no-one)\s+(named|called|by that name|by the name)\b/g),
  cue(
    'wrong_number',
    4,
    /\b(had|has|used to have)\s+this\s+number\b|\b(got|had|have had)\s+(this|the)\s+number\s+(for|since|about)\b|\bmy number since\b/g,
  ),
  cue(
    'wrong_number',
    4,
    /\b(records|information|info|list|data|file)\s+(is|are|must be)\s+(wrong|outdated|out of date)\b/g,
  ),
  cue('wrong_number', 4, /\bno\s+[a-z]+\s+(on staff|works here|at this (number|address))\b/g),
  cue('wrong_number', 4, /\bgave you (my|the wrong|this) number\b|\b(digit|number) off\b/g),
  cue('wrong_number', 3, /\bthis is my (phone|number|cell|business line|line)\b/g),
  cue('wrong_number', 3, /\b(don'?t|do not)\s+know\s+(any|anyone|anybody|a|who)\b/g),
  cue('wrong_number', 5, /\b(no|nobody|no one|no-one)\s+(here\s+)?(by|named|called|with)\s+that\s+name\b/g),
  cue('wrong_number', 5, /\bthere'?s\s+no\s+[a-z]+(\s+[a-z]+)?\s+(here|at this number|living here)\b/g),
  cue('wrong_number', 5, /\bthere is no\s+[a-z]+(\s+[a-z]+)?\s+(here|at this number)\b/g),
  cue('wrong_number', 5, /\b(doesn'?t|does not|don'?t|do not|no longer)\s+(live|work|lives|works)\s+here\b/g),
  cue('wrong_number', 4, /\b(this|that)\s+(isn'?t|is not|ain'?t)\s+[a-z]+'?s?\s+(number|phone|line)\b/g),
  cue('wrong_number', 4, /\bnever\s+heard\s+of\s+(him|her|them|that person|anyone)\b/g),
  cue('wrong_number', 4, /\b(not|isn'?t)\s+(his|her|their)\s+(number|phone)\s+any\s?more\b/g),
  cue('wrong_number', 4, /\b(got|have)\s+(a|my|this)\s+new\s+number\b|\bjust got this number\b/g),
  cue(
    'wrong_number',
    3,
    /\bthis is (a|an|the)\s+[a-z]+\s+(shop|store|bakery|restaurant|office|business|clinic|company|salon|garage)\b/g,
  ),

  cue('not_interested', 4, /\bnot\s+(really\s+|at all\s+|even\s+)?interested\b/g),
  cue('not_interested', 4, /\bno\s+interest\b/g),
  cue('not_interested', 3, /\bno,?\s+(thanks|thank you|thx)\b/g),
  cue('not_interested', 3, /\bnot\s+for\s+(me|us)\b/g),
  cue(
    'not_interested',
    3,
    /\b(we'?re|i'?m|we are|i am)\s+(all set|good|fine|covered|okay|ok|sorted|happy)\b(?!\s+(to|with (that|it|this)))/g,
  ),
  cue(
    'not_interested',
    3,
    /\b(happy|satisfied|staying|sticking)\s+with\s+(our|my|the)\s+(current|existing)?\s*\w*/g,
  ),
  cue('not_interested', 3, /\b(don'?t|do not|doesn'?t|does not)\s+(really\s+)?(need|want)\b/g),
  cue('not_interested', 3, /\b(i'?ll|we'?ll|i will|we will|gonna)\s+pass\b|\bpass on (it|this|that)\b/g),
  cue('not_interested', 3, /\b(no need|no way|not a chance|never mind|nope|nah)\b/g),
  cue(
    'not_interested',
    3,
    /\b(already\s+(have|got|use|using|signed)|can'?t afford|not looking|not in the market)\b/g,
  ),
  cue('not_interested', 2, /\b(not|don'?t)\s+(think so|see the point|bother)\b/g),
  cue('not_interested', 2, /\b(decline|no deal|not buying|not today)\b/g),
  cue(
    'not_interested',
    3,
    /\b(let it (lapse|expire|go)|not renewing|won'?t be renewing|cancel (it|my|our))\b/g,
  ),
  cue(
    'not_interested',
    3,
    /\b(moved|switched|went|going|gone)\s+(over\s+)?(to|with)\s+(another|a different|someone else|a competitor)\b/g,
  ),
  cue('not_interested', 2, /\b(take my chances|decision'?s been made|decided against)\b/g),
  cue('not_interested', 2, /^\s*(honestly,?\s+|thanks,?\s+but\s+)?(no|pass)[.!]?\s*$/g),

  cue(
    'callback_requested',
    4,
    /\bcall\s+(me\s+|us\s+|back\s+)?(back|later|again|another|tomorrow|next|on|in|after|around|this|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b/g,
  ),
  cue(
    'callback_requested',
    4,
    /\b(ring|try|reach|catch|phone|give)\s+(me|us)\s+(a\s+call\s+|a\s+ring\s+|back\s+|again\s+)?(later|tomorrow|after|on|next|in|around|at|this|monday|tuesday|wednesday|thursday|friday|saturday|sunday|some other|another)\b/g,
  ),
  cue(
    'callback_requested',
    3,
    /\b(busy|driving|in a meeting|at work|on the road|with a (customer|patient|client)|in the middle of|about to (go|leave|head)|on another call|at the doctor)\b/g,
  ),
  cue(
    'callback_requested',
    3,
    /\b(not a good|bad|terrible|better|another|different)\s+time\b|\bcan'?t talk\b/g,
  ),
  cue(
    'callback_requested',
    2,
    /\b(later|tomorrow|next week|this evening|tonight|after (five|six|lunch|work|\d))\b/g,
  ),

  cue('interested', 4, /\b(very\s+|really\s+|definitely\s+|quite\s+)?interested\b/g),
  cue('interested', 4, /\b(sign|count)\s+(me|us)\s+(up|in)\b/g),
  cue('interested', 4, /\b(let'?s|lets)\s+(do|go|book|set|schedule|get)\b/g),
  cue('interested', 3, /\b(tell|show)\s+me\s+more\b|\blearn\s+more\b|\bmore\s+(info|information|details)\b/g),
  cue('interested', 3, /\bsend\s+(it|me|them|that|this|over|the|a|an|us)\b/g),
  cue(
    'interested',
    3,
    /\b(book|schedule|set up|lock in|put me down|sounds like a plan|go ahead|i'?m in|we'?re in)\b/g,
  ),
  cue(
    'interested',
    3,
    /\b(sounds|that'?s|that is|looks)\s+(good|great|interesting|perfect|fine|reasonable|fair)\b/g,
  ),
  cue('interested', 3, /\b(i'?d|i would|we'?d|we would)\s+(like|love|be happy)\b/g),
  cue('interested', 2, /\bwhen\s+can\s+(you|your|someone|they|the)\b|\bhow\s+soon\b/g),
  cue('interested', 1, /\bhow\s+much\b|\bwhat\s+does\s+it\s+cost\b/g),
  cue(
    'interested',
    1,
    /\b(yes|yeah|yep|yup|sure|absolutely|definitely|of course|okay|ok|alright|great|perfect)\b/g,
  ),
];

/** The score an intent needs before it is believed; below it the call's intent is `other`. */
const MIN_SCORE = 2;

/** The call's intent by score; ties go to the earlier entry (the stronger claim). */
const TIE_ORDER: Array<Exclude<Intent, 'other'>> = [
  'do_not_call',
  'voicemail',
  'wrong_number',
  'not_interested',
  'callback_requested',
  'interested',
];

const OUTCOME: Record<Intent, string> = {
  interested: 'The contact was interested',
  not_interested: 'The contact declined',
  callback_requested: 'The contact asked to be called back',
  wrong_number: 'The call did not reach the intended contact (wrong number)',
  do_not_call: 'The contact asked not to be called again',
  voicemail: 'The call reached voicemail',
  other: 'The call ended without a clear outcome',
};

interface Sentence {
  text: string;
  turn: number;
  sentiment: number;
  entities: Array<{ value: string; type: string }>;
}

interface Hit {
  intent: Exclude<Intent, 'other'>;
  /** The cue's own weight, and with the turn's recency. */
  base: number;
  weight: number;
  sentence: Sentence;
}

export interface IntentReading {
  intent: Intent;
  confidence: number;
  scores: Record<Intent, number>;
  hits: Hit[];
}

let shared: Promise<WinkMethods> | null = null;
/**
 * The language model, imported and loaded on the first analysis (about 50 ms and 17 MB of resident
 * memory): a process that never analyses a call, or analyses with an LLM, never carries it.
 */
function nlp(): Promise<WinkMethods> {
  shared ??= Promise.all([import('wink-nlp'), import('wink-eng-lite-web-model')]).then(([wink, model]) =>
    wink.default(model.default),
  );
  return shared;
}

const normalize = (text: string) =>
  ` ${text.toLowerCase().replace(/[’‘`]/g, "'").replace(/[“”]/g, '"').replace(/\s+/g, ' ')} `;

/** The contact's sentences, each with its turn, sentiment and entities. */
async function contactSentences(
  transcript: TranscriptEntry[],
): Promise<{ sentences: Sentence[]; turns: number }> {
  const wink = await nlp();
  const { its } = wink;
  const sentences: Sentence[] = [];
  const userTurns = transcript.filter((entry) => entry.role === 'user');
  userTurns.forEach((entry, turn) => {
    const doc = wink.readDoc(entry.content);
    doc.sentences().each((sentence: ItemSentence) => {
      const text = sentence.out();
      sentences.push({
        text,
        turn,
        sentiment: sentence.out(its.sentiment) as unknown as number,
        entities: sentence.entities().out(its.detail) as unknown as Array<{ value: string; type: string }>,
      });
    });
  });
  return { sentences, turns: userTurns.length };
}

/** Reads the intent from the contact's sentences. Exported for the evaluation script. */
export function readIntent(sentences: Sentence[], turns: number, callStatus?: string): IntentReading {
  const scores: Record<Intent, number> = {
    interested: 0,
    not_interested: 0,
    callback_requested: 0,
    wrong_number: 0,
    do_not_call: 0,
    voicemail: 0,
    other: 0,
  };
  const hits: Hit[] = [];
  for (const sentence of sentences) {
    // The last turn counts twice as much as the first.
    const recency = 1 + (turns > 1 ? sentence.turn / (turns - 1) : 1);
    let text = normalize(sentence.text);
    for (const rule of CUES) {
      rule.pattern.lastIndex = 0;
      const matches = text.match(rule.pattern);
      if (!matches) continue;
      scores[rule.intent] += rule.weight * recency * Math.min(matches.length, 2);
      hits.push({ intent: rule.intent, base: rule.weight, weight: rule.weight * recency, sentence });
      text = text.replace(rule.pattern, ' ');
    }
  }
  if (callStatus === 'VOICEMAIL') scores.voicemail += 100;
  let best: Intent = 'other';
  let bestScore = 0;
  let second = 0;
  for (const intent of TIE_ORDER) {
    const score = scores[intent];
    if (score > bestScore) {
      second = bestScore;
      bestScore = score;
      best = intent;
    } else if (score > second) {
      second = score;
    }
  }
  // Asking to be removed settles it, whatever else was said.
  if (scores.do_not_call >= 4) {
    best = 'do_not_call';
    second = Math.max(...TIE_ORDER.filter((i) => i !== 'do_not_call').map((i) => scores[i]));
    bestScore = scores.do_not_call;
  }
  // "Yes", "okay" and "sure" are how people answer questions: alone they are no sign of interest.
  if (best === 'interested' && !hits.some((hit) => hit.intent === 'interested' && hit.base >= 2)) {
    bestScore = 0;
  }
  if (bestScore < MIN_SCORE) {
    return { intent: 'other', confidence: sentences.length === 0 ? 0.2 : 0.35, scores, hits };
  }
  const margin = (bestScore - second) / bestScore;
  const strength = Math.min(bestScore / 8, 1);
  const confidence = Math.round(Math.min(0.97, 0.4 + 0.35 * margin + 0.22 * strength) * 100) / 100;
  return { intent: best, confidence, scores, hits };
}

/** Sentences that are only courtesy: they say nothing of how the contact feels about the call. */
const COURTESY =
  /^\s*(ok(ay)?,?\s*)?(thanks?( you)?( so much| very much)?|you too|bye(-bye)?|good ?bye|take care|have a (good|nice|great) (one|day|evening|night))[\s,.!]*(bye(-bye)?|you too|take care)?[\s,.!]*$/;

function sentimentOf(sentences: Sentence[], intent: Intent): { sentiment: Sentiment; score: number } {
  if (sentences.length === 0) return { sentiment: 'neutral', score: 0 };
  // Later sentences weigh more, like the intent; the average keeps one curse from deciding alone.
  let total = 0;
  let weights = 0.0001;
  sentences.forEach((sentence, index) => {
    if (COURTESY.test(normalize(sentence.text))) return;
    const weight = 1 + index / sentences.length;
    total += sentence.sentiment * weight;
    weights += weight;
  });
  let score = total / weights;
  if (intent === 'do_not_call') score = Math.min(score, -0.2);
  if (intent === 'interested') score = Math.max(score, 0.05);
  // Courtesy ("thanks", "have a good one") reads as positive to a lexicon; a call is positive only
  // when the contact is clearly pleased.
  const sentiment: Sentiment =
    intent === 'voicemail' ? 'neutral' : score > 0.3 ? 'positive' : score < -0.1 ? 'negative' : 'neutral';
  return { sentiment, score };
}

function satisfaction(score: number, intent: Intent): number {
  let value = Math.round(3 + score * 4);
  if (intent === 'do_not_call') value = Math.min(value, 2);
  if (intent === 'interested') value = Math.max(value, 4);
  if (intent === 'voicemail' || intent === 'wrong_number') value = 3;
  return Math.max(1, Math.min(5, value));
}

const shorten = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;

/** The decisive sentences: those that carried the winning intent's cues, strongest first. */
function decisiveSentences(reading: IntentReading, sentences: Sentence[]): Sentence[] {
  const winning = reading.hits.filter((hit) => hit.intent === reading.intent);
  // A bare "yes" or "sure" is evidence, but not worth quoting when a clearer sentence exists.
  const clear = winning.filter((hit) => hit.base >= 2);
  const picked = (clear.length > 0 ? clear : winning)
    .sort((a, b) => b.weight - a.weight)
    .map((hit) => hit.sentence);
  const unique = [...new Set(picked)];
  if (unique.length > 0) return unique;
  return [...sentences].sort((a, b) => b.text.length - a.text.length).slice(0, 1);
}

function keyPointsOf(reading: IntentReading, sentences: Sentence[]): string[] {
  const points = decisiveSentences(reading, sentences)
    .slice(0, 3)
    .sort((a, b) => a.turn - b.turn)
    .map((sentence) => `Contact: "${shorten(sentence.text, 120)}"`);
  const seen = new Set<string>();
  for (const sentence of sentences) {
    for (const entity of sentence.entities) {
      if (!['DATE', 'TIME', 'DURATION', 'EMAIL', 'MONEY', 'PHONE', 'URL'].includes(entity.type)) continue;
      const label = `${entity.type.toLowerCase()}: ${entity.value}`;
      if (seen.has(label)) continue;
      seen.add(label);
      points.push(`Mentioned ${label}`);
    }
  }
  return points.slice(0, 8);
}

function summaryOf(reading: IntentReading, sentences: Sentence[]): string {
  const outcome = OUTCOME[reading.intent];
  if (sentences.length === 0) return `${outcome}; the contact said nothing.`;
  const quotes = decisiveSentences(reading, sentences)
    .slice(0, 2)
    .sort((a, b) => a.turn - b.turn)
    .map((sentence) => `"${shorten(sentence.text, 140)}"`);
  return `${outcome}. They said: ${quotes.join(' … ')}`;
}

const STOPWORDS = new Set(
  'a an the of to in on for and or is are was were be been did does do has have had with about any this that their they them it its customer contact caller call whether if talk talked say said mention mentioned ask asked tell told agree agreed want wanted give gave get got how what when where which who'.split(
    ' ',
  ),
);

function words(text: string): string[] {
  return normalize(text)
    .split(/[^a-z0-9']+/)
    .filter((word) => word.length > 2 && !STOPWORDS.has(word))
    .map((word) => word.replace(/(ing|ed|es|s)$/, ''));
}

/**
 * A custom metric, read offline as well as words allow: the contact's sentence that shares the
 * most words with the metric's name and description decides it (a boolean is true unless that
 * sentence is negative; a number is the first number in it; a string is the sentence itself); an
 * enum is the option named in the contact's words. Null when nothing in the call touches it.
 */
function customValue(metric: CustomMetric, sentences: Sentence[]): unknown {
  if (metric.type === 'enum') {
    const spoken = sentences.map((sentence) => normalize(sentence.text)).join(' ');
    const option = (metric.options ?? []).find((candidate) => spoken.includes(` ${candidate.toLowerCase()}`));
    return option ?? null;
  }
  const wanted = new Set(
    words(`${metric.name.replace(/([a-z])([A-Z])/g, '$1 $2')} ${metric.description ?? ''}`),
  );
  let best: Sentence | null = null;
  let bestOverlap = 0;
  for (const sentence of sentences) {
    const overlap = words(sentence.text).filter((word) => wanted.has(word)).length;
    if (overlap > bestOverlap) {
      best = sentence;
      bestOverlap = overlap;
    }
  }
  if (!best) return null;
  switch (metric.type) {
    case 'boolean':
      return !/\b(no|not|never|don'?t|doesn'?t|didn'?t|won'?t|can'?t)\b/.test(normalize(best.text));
    case 'number': {
      const number = /-?\d+(\.\d+)?/.exec(best.text.replace(/,/g, ''));
      return number ? Number(number[0]) : null;
    }
    case 'string':
      return shorten(best.text, 300);
  }
}

export class LocalAnalyzer implements Analyzer {
  readonly name = 'local';

  async analyze(input: AnalysisInput): Promise<Analysis> {
    const transcript = cleanTranscript(input.transcription);
    const { sentences, turns } = await contactSentences(transcript);
    const reading = readIntent(sentences, turns, input.callStatus);
    const { sentiment, score } = sentimentOf(sentences, reading.intent);
    const metricJson: MetricJson = {
      intent: reading.intent,
      sentiment,
      confidence: reading.confidence,
      keyPoints: keyPointsOf(reading, sentences),
      customerSatisfaction: satisfaction(score, reading.intent),
    };
    const custom = activeCustomMetrics(input.metricConfig);
    for (const metric of custom) metricJson[metric.name] = customValue(metric, sentences);
    return {
      summary: summaryOf(reading, sentences),
      metricJson,
      customMetricsProcessed: custom.length,
      analyzer: this.name,
    };
  }
}
