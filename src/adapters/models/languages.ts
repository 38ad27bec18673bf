/**
 * The agent's `agentLanguage` as the speech models need it: the ISO 639-1 code speech-to-text
 * servers take as `language`, and the espeak-ng voice of the offline text-to-speech. The spec
 * shows only 'en' and names the Dial6 languages and Saudi Arabic in words, so BCP 47 tags
 * ('hi-IN', 'ar-SA', 'en-IN'), bare codes ('hi') and the English names ('Hindi', 'English India',
 * 'Arabic (Saudi Arabia)') are all understood.
 */

interface Language {
  /** ISO 639-1. */
  code: string;
  /** espeak-ng's voice for it (checked against `espeak-ng --voices`, 1.51). */
  espeak: string;
  /** Lower-case English names, as a dashboard might show them. */
  names: string[];
}

/** The Dial6 languages, Saudi Arabic, and English. */
const LANGUAGES: Language[] = [
  { code: 'hi', espeak: 'hi', names: ['hindi'] },
  { code: 'ta', espeak: 'ta', names: ['tamil'] },
  { code: 'te', espeak: 'te', names: ['telugu'] },
  { code: 'bn', espeak: 'bn', names: ['bengali', 'bangla'] },
  { code: 'kn', espeak: 'kn', names: ['kannada'] },
  { code: 'ml', espeak: 'ml', names: ['malayalam'] },
  { code: 'mr', espeak: 'mr', names: ['marathi'] },
  { code: 'gu', espeak: 'gu', names: ['gujarati'] },
  { code: 'pa', espeak: 'pa', names: ['punjabi', 'panjabi'] },
  // espeak-ng names Odia by its older name, Oriya, under its ISO code 'or'.
  { code: 'or', espeak: 'or', names: ['odia', 'oriya'] },
  // espeak-ng has one Arabic voice (Modern Standard); it is what a Saudi agent falls back to.
  {
    code: 'ar',
    espeak: 'ar',
    names: ['arabic', 'arabic (saudi arabia)', 'saudi arabic', 'arabic saudi arabia'],
  },
  { code: 'en', espeak: 'en-us', names: ['english', 'english (us)', 'american english'] },
];

/**
 * English by region: espeak-ng has no Indian English voice; British English (non-rhotic, as
 * Indian English mostly is) is the nearer of the two it has.
 */
const ENGLISH_BY_REGION: Record<string, string> = { in: 'en-gb', gb: 'en-gb', uk: 'en-gb', us: 'en-us' };
const INDIAN_ENGLISH_NAMES = ['english india', 'english (india)', 'indian english', 'english - india'];

export const DEFAULT_ESPEAK_VOICE = 'en-us';

function parse(agentLanguage: string | null | undefined): { language?: Language; region?: string } {
  const raw = agentLanguage?.trim().toLowerCase();
  if (!raw) return {};
  if (INDIAN_ENGLISH_NAMES.includes(raw))
    return { language: LANGUAGES.find((l) => l.code === 'en'), region: 'in' };
  const byName = LANGUAGES.find((language) => language.names.includes(raw));
  if (byName)
    return { language: byName, ...(byName.code === 'ar' && raw !== 'arabic' ? { region: 'sa' } : {}) };
  const [primary, ...rest] = raw.split(/[-_]/);
  const region = rest.find((part) => /^([a-z]{2}|\d{3})$/.test(part));
  const language = LANGUAGES.find((candidate) => candidate.code === primary);
  if (language) return { language, ...(region ? { region } : {}) };
  return {};
}

/**
 * The ISO 639-1 code for speech-to-text (`language`), or undefined when the agent has none or it
 * is not a language this can name (the server then detects it).
 */
export function sttLanguage(agentLanguage: string | null | undefined): string | undefined {
  const { language } = parse(agentLanguage);
  if (language) return language.code;
  const primary = agentLanguage?.trim().toLowerCase().split(/[-_]/)[0];
  return primary && /^[a-z]{2}$/.test(primary) ? primary : undefined;
}

/**
 * The espeak-ng voice for the agent's language: the table above, else the tag's own primary code
 * when espeak-ng has that voice (`available`), else en-us.
 */
export function espeakVoice(
  agentLanguage: string | null | undefined,
  available?: ReadonlySet<string>,
): string {
  const { language, region } = parse(agentLanguage);
  if (language?.code === 'en') return (region && ENGLISH_BY_REGION[region]) ?? DEFAULT_ESPEAK_VOICE;
  if (language) return language.espeak;
  const tag = agentLanguage?.trim().toLowerCase().replace(/_/g, '-');
  if (tag && available) {
    if (available.has(tag)) return tag;
    const primary = tag.split('-')[0] ?? '';
    if (available.has(primary)) return primary;
  }
  return DEFAULT_ESPEAK_VOICE;
}
