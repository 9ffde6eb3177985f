/**
 * Canonical names for the context graph's entities: the key that merges the same entity across files and
 * matches a search query. They must not change between runs, so dates resolve only when today does not matter.
 */
import { createRequire } from 'node:module';
import type nlp from 'compromise';
import type datesPlugin from 'compromise-dates';
import type { DatesMethods } from 'compromise-dates';

export type EntityType = 'person' | 'organization' | 'place' | 'date' | 'money';

export type CompromiseDocument = ReturnType<typeof nlp<DatesMethods>>;

// Loaded on first use: compromise and its dates plugin take tens of milliseconds to load.
let parser: ((text: string) => CompromiseDocument) | undefined;

/** compromise with the dates plugin, loaded once per process. */
export function compromise(): (text: string) => CompromiseDocument {
  if (!parser) {
    const require = createRequire(import.meta.url);
    const interop = <T>(mod: unknown): T => (mod as { default?: T }).default ?? (mod as T);
    const library = interop<typeof nlp>(require('compromise'));
    library.plugin(interop<typeof datesPlugin>(require('compromise-dates')));
    // Noun and verb phrase chunking costs a sixth of the parse and no entity method reads it. This instance is
    // private to this module (the CommonJS build), so no other user of compromise sees the change.
    const world = library.world() as { hooks: string[] };
    world.hooks = world.hooks.filter((hook) => hook !== 'chunks');
    parser = (text) => library<DatesMethods>(text);
  }
  return parser;
}

/** Legal forms that say nothing about which organisation it is: "Acme Corp." and "Acme Corporation" are "acme". */
const LEGAL_FORMS = new Set([
  'inc',
  'incorporated',
  'corp',
  'corporation',
  'ltd',
  'limited',
  'llc',
  'llp',
  'lp',
  'plc',
  'co',
  'company',
  'gmbh',
  'ag',
  'sa',
  'sas',
  'srl',
  'spa',
  'nv',
  'bv',
  'pty',
  'oy',
  'ab',
  'kg',
  'se',
]);
const HONORIFICS = new Set(['mr', 'mrs', 'ms', 'miss', 'dr', 'prof', 'sir', 'dame']);

/** Whether a word (any case, dots ignored) is a legal form such as Inc., Ltd or GmbH. */
export function isLegalForm(word: string): boolean {
  return LEGAL_FORMS.has(word.toLowerCase().replace(/\./g, ''));
}

export function canonicalName(type: EntityType, name: string): string {
  const text = normalise(name);
  switch (type) {
    case 'organization':
      return stripLegalForms(text);
    case 'person':
      return stripHonorific(text);
    case 'date':
      return isoDate(text) ?? text;
    case 'money':
      return money(text) ?? text;
    default:
      return text;
  }
}

/** NFKC, no diacritics, lower case, single spaces, no leading "the", no possessive, no trailing punctuation. */
function normalise(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^the /, '')
    .replace(/'s?$/, '')
    .replace(/[\s,;:!?]+$/, '')
    .replace(/(?<=\w{3})\.$/, '');
}

function stripLegalForms(text: string): string {
  const words = text.split(' ');
  while (words.length > 1 && isLegalForm(words[words.length - 1]!.replace(/,$/, ''))) words.pop();
  if (words.length > 1 && words[words.length - 1] === '&') words.pop();
  return words.join(' ').replace(/,$/, '').replace(/\.$/, '');
}

function stripHonorific(text: string): string {
  const words = text.split(' ');
  if (words.length > 1 && HONORIFICS.has(words[0]!.replace(/\.$/, ''))) words.shift();
  return words.join(' ');
}

const ISO_BY_UNIT: Record<string, number> = { day: 10, month: 7, year: 4 };
const dateCache = new Map<string, string | null>();

/** The ISO date (YYYY-MM-DD, YYYY-MM or YYYY) when two far-apart "todays" resolve it the same way. */
function isoDate(text: string): string | null {
  const cached = dateCache.get(text);
  if (cached !== undefined) return cached;
  const resolve = (today: string) => compromise()(text).dates({ timezone: 'UTC', today }).get(0);
  const [a, b] = [resolve('2001-06-15'), resolve('2031-02-10')];
  const length = a?.unit ? ISO_BY_UNIT[a.unit] : undefined;
  const iso = a?.start && length && a.start === b?.start && a.unit === b.unit ? a.start.slice(0, length) : null;
  if (dateCache.size >= 10_000) dateCache.clear();
  dateCache.set(text, iso);
  return iso;
}

const CURRENCIES: [RegExp, string][] = [
  [/us\$|\$|\bus ?dollars?\b|\bdollars?\b|\busd\b/, 'usd'],
  [/€|\beuros?\b|\beur\b/, 'eur'],
  [/£|\bpounds?(?: sterling)?\b|\bgbp\b/, 'gbp'],
  [/¥|\byen\b|\bjpy\b/, 'jpy'],
  [/₹|\brupees?\b|\binr\b/, 'inr'],
  [/\bswiss francs?\b|\bchf\b/, 'chf'],
  [/\b(?:cad|aud|cny|rmb|sek|nok|dkk|brl|mxn|krw|sgd|hkd|nzd|zar)\b/, ''],
];
const MULTIPLIERS: Record<string, number> = {
  k: 3,
  thousand: 3,
  m: 6,
  mn: 6,
  mm: 6,
  million: 6,
  millions: 6,
  b: 9,
  bn: 9,
  billion: 9,
  billions: 9,
  t: 12,
  tn: 12,
  trillion: 12,
};

/** "$1.2 million" → "usd 1200000": the ISO currency code (when it can be told) and the exact amount. */
function money(text: string): string | null {
  const amount = /(\d[\d,]*(?:\.\d+)?)\s*(k|m|mn|mm|b|bn|t|tn|thousand|millions?|billions?|trillion)?\b/.exec(text);
  if (!amount) return null;
  const [whole = '', fraction = ''] = amount[1]!.replace(/,/g, '').split('.');
  const digits = decimalShift(whole, fraction, MULTIPLIERS[amount[2] ?? ''] ?? 0);
  for (const [pattern, code] of CURRENCIES) {
    const found = pattern.exec(text);
    if (found) return `${code || found[0]} ${digits}`;
  }
  return digits;
}

/** whole.fraction × 10^exponent, written exactly (no floating point). */
function decimalShift(whole: string, fraction: string, exponent: number): string {
  const shifted =
    fraction.length <= exponent
      ? `${whole}${fraction}${'0'.repeat(exponent - fraction.length)}`
      : `${whole}${fraction.slice(0, exponent)}.${fraction.slice(exponent)}`;
  return shifted
    .replace(/^0+(?=\d)/, '')
    .replace(/(\.\d*?)0+$/, '$1')
    .replace(/\.$/, '');
}
