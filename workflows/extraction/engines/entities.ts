/**
 * Offline entity and relation extraction for the context graph: people, organisations, places, dates and
 * money in a file's passages, and the relations between them. A pure function of its input: the same
 * passages give the same items in the same order, so a retried extraction stores the same rows.
 */
import { analyseChunk, type FoundEntity, type Span, type Verb } from './entity-finders.js';
import { canonicalName, type EntityType } from './entity-names.js';
import { relationsOf, type RelationType } from './relations.js';

export { canonicalName, type EntityType } from './entity-names.js';
export type { RelationType } from './relations.js';

/** A page of text (page set) or a transcript segment (start_ms and end_ms set). */
export interface Passage {
  text: string;
  page: number | null;
  start_ms: number | null;
  end_ms: number | null;
}

/** Where in the input an item was found; page and times are the passage's. */
interface Placed {
  /** Index of the passage in the input. */
  passage: number;
  /** Character offsets in the passage's text. */
  start: number;
  end: number;
  page: number | null;
  start_ms: number | null;
  end_ms: number | null;
}

export interface EntityMention extends Placed {
  type: EntityType;
  /** As written: passages[passage].text.slice(start, end). */
  name: string;
  /** The key that merges mentions of one entity (see canonicalName). */
  canonical: string;
  extractor: 'compromise' | 'wink';
}

export interface EntityRelation extends Placed {
  type: RelationType;
  /** Indexes into mentions. */
  source: number;
  target: number;
  extractor: 'pattern' | 'cooccurrence';
}

export interface EntityExtraction {
  mentions: EntityMention[];
  relations: EntityRelation[];
}

export interface ExtractionLimits {
  /** Mentions kept per passage; the rest of a passage past the limit is not read. */
  mentionsPerPassage: number;
  /** Text is analysed in chunks of about this many characters, cut at sentence ends. */
  chunkCharacters: number;
}

export const DEFAULT_LIMITS: ExtractionLimits = { mentionsPerPassage: 2000, chunkCharacters: 4000 };

/** A sentence with what relations need: its span, its verbs, and the mentions in it (by index). */
export interface Sentence extends Span {
  passage: number;
  verbs: Verb[];
  mentions: number[];
}

type Candidate = FoundEntity & { passage: number };

export function extractEntities(passages: readonly Passage[], limits: Partial<ExtractionLimits> = {}): EntityExtraction {
  const { mentionsPerPassage, chunkCharacters } = { ...DEFAULT_LIMITS, ...limits };
  const candidates: Candidate[] = [];
  const sentences: Omit<Sentence, 'mentions'>[] = [];
  passages.forEach(({ text }, passage) => {
    let kept = 0;
    for (const chunk of chunksOf(text, chunkCharacters)) {
      if (kept >= mentionsPerPassage) break;
      const found = analyseChunk(blankPlainSentences(text.slice(chunk.start, chunk.end)));
      const shift = <T extends Span>(s: T): T => ({ ...s, start: s.start + chunk.start, end: s.end + chunk.start });
      const chosen = resolveOverlaps(found.entities.map(shift));
      kept += chosen.filter((c) => c.type).length;
      candidates.push(...chosen.map((c) => ({ ...c, passage })));
      // Only sentences that can hold a relation are kept, so memory follows the mentions, not the text.
      for (const sentence of found.sentences.map(shift)) {
        if (chosen.filter((c) => c.start >= sentence.start && c.end <= sentence.end).length < 2) continue;
        const verbs = found.verbs.map(shift).filter((v) => v.start >= sentence.start && v.end <= sentence.end);
        sentences.push({ ...sentence, passage, verbs });
      }
    }
  });
  const mentions = typeCandidates(candidates, passages, mentionsPerPassage);
  return { mentions, relations: relationsOf(passages, mentions, placeMentions(sentences, mentions)) };
}

/** Spans of about `size` characters, each ending after a sentence or paragraph when there is one to end at. */
export function* chunksOf(text: string, size: number): Generator<Span> {
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const window = text.slice(start + Math.floor(size / 2), end);
      const boundary = /[.!?]["'\u201d)\]]*\s+(?=\S)|\n\s*\n/g;
      let last = -1;
      for (let m = boundary.exec(window); m; m = boundary.exec(window)) last = m.index + m[0].length;
      if (last < 0) last = window.lastIndexOf(' ') + 1;
      if (last > 0) end = start + Math.floor(size / 2) + last;
    }
    yield { start, end };
    start = end;
  }
}

// Words that begin sentences without naming anything; any other capitalised first word may be a name.
const SENTENCE_STARTERS = new Set(
  `a an the it its it's he she they we i i'm you this that these those there here but and or
  so yet if when while as at by in on of for to from with after before since because although though however then now
  some many most all no nobody none every each one his her their our my your what which who how why where once even
  still also just only both either neither not such much more less few several another other nothing everyone someone
  later soon perhaps maybe yes oh well`.split(/\s+/),
);
const SEGMENT = /[^.!?\n]+(?:[.!?]+["'\u201d\u2019)\]]*|\n+|$)/g;
const CAPITAL_INSIDE = /[\s"'\u201c\u2018([-]\p{Lu}(?=[\p{L}.])/u;

/**
 * compromise's parse is four fifths of the cost, so sentences with nothing that could be an entity (no digit,
 * no currency sign, no capital but an ordinary first word) are blanked to spaces before it reads the chunk.
 * Offsets do not move, and a sentence after an abbreviation ("Mr. Holmes laughed.") is kept.
 */
export function blankPlainSentences(text: string): string {
  let previous = '';
  return text.replace(SEGMENT, (segment) => {
    const first = /^[\s"'\u201c\u2018([]*(\p{Lu}[\p{L}'\u2019-]*)/u.exec(segment)?.[1];
    const likely =
      /[\d$\u20ac\u00a3\u00a5\u20b9]/.test(segment) ||
      CAPITAL_INSIDE.test(segment.slice(1)) ||
      (first !== undefined && !SENTENCE_STARTERS.has(first.toLowerCase().replace('\u2019', "'"))) ||
      /\b\p{Lu}\p{Ll}{0,3}\.$/u.test(previous.trimEnd());
    previous = segment;
    return likely ? segment : segment.replace(/\S/g, ' ');
  });
}

/**
 * One mention per stretch of text: the longest span wins, compromise first at equal length. A wink span that
 * covers exactly one compromise mention takes that mention's type; one that covers several is dropped.
 */
function resolveOverlaps(found: FoundEntity[]): FoundEntity[] {
  const fromCompromise = found.filter((f) => f.extractor === 'compromise');
  const overlaps = (a: Span, b: Span) => a.start < b.end && b.start < a.end;
  const typed: FoundEntity[] = [];
  for (const f of found) {
    if (f.extractor === 'compromise') {
      typed.push(f);
      continue;
    }
    const covered = fromCompromise.filter((c) => overlaps(c, f));
    if (covered.length > 1) continue;
    typed.push(covered[0] ? { ...f, type: covered[0].type } : f);
  }
  typed.sort((a, b) => b.end - b.start - (a.end - a.start) || rank(a) - rank(b) || a.start - b.start);
  const kept: FoundEntity[] = [];
  for (const f of typed) if (!kept.some((k) => overlaps(k, f))) kept.push(f);
  return kept.sort((a, b) => a.start - b.start);
}

const rank = (f: FoundEntity) => (f.extractor === 'compromise' ? 0 : 1);

/**
 * Gives wink's untyped proper nouns the type of a typed mention with the same canonical name anywhere in the
 * input ("Acme" after "Acme Corp."), drops the rest, and makes the mentions.
 */
function typeCandidates(candidates: Candidate[], passages: readonly Passage[], perPassage: number): EntityMention[] {
  const known = new Map<string, EntityType>();
  const typeOrder: EntityType[] = ['organization', 'person', 'place'];
  for (const type of typeOrder) {
    for (const c of candidates) {
      if (c.type !== type) continue;
      const key = canonicalName(type, passages[c.passage]!.text.slice(c.start, c.end));
      if (!known.has(key)) known.set(key, type);
    }
  }
  const mentions: EntityMention[] = [];
  const counts = new Map<number, number>();
  for (const c of candidates) {
    if ((counts.get(c.passage) ?? 0) >= perPassage) continue;
    const { text, page, start_ms, end_ms } = passages[c.passage]!;
    const name = text.slice(c.start, c.end);
    const type = c.type ?? typeOrder.find((t) => known.get(canonicalName(t, name)) === t);
    if (!type) continue;
    counts.set(c.passage, (counts.get(c.passage) ?? 0) + 1);
    mentions.push({
      type,
      name,
      canonical: canonicalName(type, name),
      passage: c.passage,
      start: c.start,
      end: c.end,
      page,
      start_ms,
      end_ms,
      extractor: c.extractor,
    });
  }
  return mentions;
}

/** Each sentence with the indexes of the mentions inside it; mentions and sentences are both in text order. */
function placeMentions(sentences: Omit<Sentence, 'mentions'>[], mentions: EntityMention[]): Sentence[] {
  const placed: Sentence[] = [];
  let m = 0;
  for (const sentence of sentences) {
    while (
      m < mentions.length &&
      (mentions[m]!.passage < sentence.passage || (mentions[m]!.passage === sentence.passage && mentions[m]!.start < sentence.start))
    )
      m++;
    const inside: number[] = [];
    for (let k = m; k < mentions.length && mentions[k]!.passage === sentence.passage && mentions[k]!.start < sentence.end; k++) {
      if (mentions[k]!.end <= sentence.end) inside.push(k);
    }
    if (inside.length >= 2) placed.push({ ...sentence, mentions: inside });
  }
  return placed;
}
