/**
 * The two engines that find entity spans in one chunk of text: compromise (typed people, organisations,
 * places, dates, money, and the chunk's sentences and verbs) and wink-nlp (proper-noun runs it proposes as
 * extra candidates). Offsets are relative to the chunk.
 */
import { createRequire } from 'node:module';
import type winkNLP from 'wink-nlp';
import type { WinkMethods } from 'wink-nlp';
import type { Term } from 'compromise/misc';
import { compromise, type EntityType } from './entity-names.js';

export interface Span {
  start: number;
  end: number;
}

export interface FoundEntity extends Span {
  /** null: a proper noun wink found with no cue to its type; it is kept only if the input names it elsewhere. */
  type: EntityType | null;
  extractor: 'compromise' | 'wink';
}

export interface Verb extends Span {
  word: string;
}

export interface ChunkAnalysis {
  entities: FoundEntity[];
  sentences: Span[];
  verbs: Verb[];
}

type PlacedTerm = Term & { offset?: { start: number; length: number } };

/** Words that end organisation names often enough to type a proper-noun run on their own. */
const ORGANISATION_HEADS = new Set([
  'inc',
  'inc.',
  'corp',
  'corp.',
  'corporation',
  'ltd',
  'ltd.',
  'limited',
  'llc',
  'plc',
  'gmbh',
  'ag',
  'co.',
  'company',
  'group',
  'holdings',
  'bank',
  'university',
  'institute',
  'foundation',
  'association',
  'agency',
  'ministry',
  'council',
  'partners',
  'technologies',
  'systems',
  'labs',
  'capital',
  'ventures',
  'industries',
  'airlines',
  'traders',
  'trading',
  'motors',
  'foods',
  'energy',
  'pharmaceuticals',
  'media',
  'solutions',
  'networks',
  'logistics',
  'airways',
  'insurance',
  'software',
  'studios',
  'enterprises',
  'associates',
  'consulting',
  'electronics',
  'communications',
  'robotics',
  'dynamics',
  'analytics',
  'brands',
  'stores',
]);
// A proper noun right after a role at an organisation, or right before what only organisations do, names one.
const ORGANISATION_BEFORE =
  /\b(?:(?:ceo|cfo|coo|cto|chair(?:man|woman)?|president|founder|co-founder|director|head|chief \w+ officer|employee|spokes(?:man|woman|person)) (?:of|at)|works? (?:at|for)|worked (?:at|for)|joined|acquired|acquisition of|invested in|subsidiary of)\s+$/i;
const ORGANISATION_AFTER = /^,?\s+(?:acquired|bought|purchased|hired|appointed|announced|reported|merged|raised|launched|sued|agreed)\b/i;
const DATE_LEAD = new Set(['on', 'in', 'at', 'during', 'of']);
// Abbreviated suffixes whose full stop belongs to the name ("Acme Corp.").
const ABBREVIATED_SUFFIX = /^(?:inc|corp|ltd|co|bros|plc|llc)$/i;

export function analyseChunk(text: string): ChunkAnalysis {
  const doc = compromise()(text);
  doc.compute('offset');
  const entities: FoundEntity[] = [];
  const add = (type: EntityType, terms: PlacedTerm[]) => {
    const span = spanOf(text, terms);
    if (span) entities.push({ ...span, type, extractor: 'compromise' });
  };
  for (const terms of doc.people().docs) add('person', terms);
  for (const terms of doc.organizations().docs) add('organization', terms);
  for (const terms of doc.places().docs) add('place', terms);
  if (doc.has('#Date')) {
    for (const terms of doc.dates({ timezone: 'UTC', today: '2000-01-01' }).docs) {
      let from = 0;
      while (from < terms.length - 1 && DATE_LEAD.has(terms[from]!.normal)) from++;
      add('date', terms.slice(from));
    }
  }
  for (const terms of moneyRuns(doc.docs)) add('money', terms);
  entities.push(...winkEntities(text));

  const sentences: Span[] = [];
  const verbs: Verb[] = [];
  for (const terms of doc.docs as PlacedTerm[][]) {
    const span = spanOf(text, terms);
    if (!span) continue;
    const last = terms[terms.length - 1]!;
    sentences.push({ start: span.start, end: span.end + /^\S*/.exec(last.post)![0].length });
    for (const term of terms) {
      if (term.tags?.has('Verb') && term.offset) verbs.push({ ...spanOf(text, [term])!, word: term.normal });
    }
  }
  return { entities, sentences, verbs };
}

function spanOf(text: string, terms: PlacedTerm[]): Span | null {
  const first = terms[0]?.offset;
  const last = terms[terms.length - 1];
  if (!first || !last?.offset) return null;
  let end = last.offset.start + last.offset.length;
  if (ABBREVIATED_SUFFIX.test(last.text) && text[end] === '.') end++;
  return end > first.start ? { start: first.start, end } : null;
}

/** "$1.2 million", "5 million dollars", "USD 2,000": a currency and a number with no punctuation between. */
function moneyRuns(sentences: PlacedTerm[][]): PlacedTerm[][] {
  const runs: PlacedTerm[][] = [];
  const isMoneyish = (t: PlacedTerm) => t.tags?.has('Money') || t.tags?.has('Currency');
  for (const terms of sentences) {
    for (let i = 0; i < terms.length; i++) {
      if (!isMoneyish(terms[i]!)) continue;
      let j = i;
      while (j + 1 < terms.length && terms[j]!.post.trim() === '' && (isMoneyish(terms[j + 1]!) || terms[j + 1]!.tags?.has('Value'))) j++;
      const run = terms.slice(i, j + 1);
      if (run.some((t) => /\d/.test(t.text) || t.tags?.has('NumericValue') || t.tags?.has('TextValue'))) runs.push(run);
      i = j;
    }
  }
  return runs;
}

type Wink = { nlp: WinkMethods };
let wink: Wink | undefined;

function winkEngine(): Wink {
  if (!wink) {
    const require = createRequire(import.meta.url);
    const interop = <T>(mod: unknown): T => (mod as { default?: T }).default ?? (mod as T);
    const model = interop<Parameters<typeof winkNLP>[0]>(require('wink-eng-lite-web-model'));
    wink = { nlp: interop<typeof winkNLP>(require('wink-nlp'))(model) };
  }
  return wink;
}

/** wink's dates and money, and its runs of proper nouns (typed by their last word when it names a kind of organisation). */
function winkEntities(text: string): FoundEntity[] {
  const { nlp } = winkEngine();
  const doc = nlp.readDoc(text);
  const values = doc.tokens().out(nlp.its.value) as string[];
  const tags = doc.tokens().out(nlp.its.pos) as string[];
  const spans: Span[] = [];
  let cursor = 0;
  for (const value of values) {
    const start = text.indexOf(value, cursor);
    if (start < 0) return []; // wink rewrote a token; no offsets to trust in this chunk
    spans.push({ start, end: start + value.length });
    cursor = start + value.length;
  }
  const found: FoundEntity[] = [];
  const types = doc.entities().out(nlp.its.type) as string[];
  const entitySpans = doc.entities().out(nlp.its.span) as unknown as [number, number][];
  entitySpans.forEach(([first, last], k) => {
    const type = types[k] === 'DATE' ? 'date' : types[k] === 'MONEY' ? 'money' : null;
    if (type && spans[first] && spans[last]) found.push({ start: spans[first].start, end: spans[last].end, type, extractor: 'wink' });
  });
  for (let i = 0; i < tags.length; i++) {
    if (tags[i] !== 'PROPN' || !/^\p{Lu}/u.test(values[i]!)) continue;
    let j = i;
    while (tags[j + 1] === 'PROPN' && spans[j + 1]!.start - spans[j]!.end <= 1 && /^[\p{Lu}&]/u.test(values[j + 1]!)) j++;
    const head = values[j]!.toLowerCase();
    const [start, end] = [spans[i]!.start, spans[j]!.end];
    const cued = ORGANISATION_BEFORE.test(text.slice(Math.max(0, start - 40), start)) || ORGANISATION_AFTER.test(text.slice(end, end + 30));
    found.push({ start, end, type: (ORGANISATION_HEADS.has(head) && j > i) || cued ? 'organization' : null, extractor: 'wink' });
    i = j;
  }
  return found;
}
