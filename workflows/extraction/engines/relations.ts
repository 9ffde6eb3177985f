/**
 * Relations between the mentions of one sentence: typed ones from the words between two mentions (or, for
 * dates and money, from the verb before them), and co_occurs for every other pair of distinct entities.
 */
import type { EntityMention, EntityRelation, Passage, Sentence } from './entities.js';
import type { EntityType } from './entity-names.js';

export type RelationType = 'works_for' | 'founded' | 'acquired' | 'located_in' | 'dated' | 'paid' | 'amount' | 'co_occurs';

interface Pattern {
  type: RelationType;
  /** The mention written first and the one written second. */
  first: EntityType;
  second: EntityType;
  /** Matches the whole text between the two mentions. */
  between: RegExp;
  /** The second mention is the relation's source ("Acme hired Maria" is works_for Maria → Acme). */
  reversed?: boolean;
}

const TITLE = String.raw`(?:[\w.&-]+\s+){0,4}?(?:ceo|cfo|cto|coo|cmo|president|chair(?:man|woman|person)?|director|officer|head|vp|manager|engineer|scientist|employee|spokes(?:man|woman|person)|analyst|partner|economist|researcher|editor|executive|treasurer|secretary|counsel|lawyer|professor|member|founder)`;
const THE = String.raw`(?:the\s+)?`;
const r = (source: string) => new RegExp(`^${source}$`, 'i');

// First match wins, so the more specific pattern for a pair of types comes first.
const PATTERNS: Pattern[] = [
  {
    type: 'founded',
    first: 'person',
    second: 'organization',
    between: r(String.raw`\s+(?:who\s+)?(?:has\s+)?(?:co-?founded|founded|started|established|created|set up)\s+${THE}`),
  },
  {
    type: 'founded',
    first: 'person',
    second: 'organization',
    between: r(String.raw`\s*,\s*(?:the\s+|a\s+)?(?:co-?)?founder(?:\s+and\s+${TITLE})?\s+of\s+${THE}`),
  },
  {
    type: 'founded',
    first: 'organization',
    second: 'person',
    reversed: true,
    between: r(
      String.raw`\s*,?\s*(?:which\s+)?(?:was\s+|is\s+)?(?:co-?founded|founded|started|established|created|set up)\s+(?:in\s+\S+\s+)?by\s+`,
    ),
  },
  {
    type: 'works_for',
    first: 'person',
    second: 'organization',
    between: r(String.raw`\s*,\s*(?:the\s+|a\s+|an\s+)?${TITLE}\s+(?:of|at|for|with)\s+${THE}`),
  },
  {
    type: 'works_for',
    first: 'person',
    second: 'organization',
    between: r(
      String.raw`\s+(?:who\s+)?(?:now\s+|currently\s+|still\s+)?(?:works?|worked|working|is working|has worked)\s+(?:at|for|with)\s+${THE}`,
    ),
  },
  {
    type: 'works_for',
    first: 'person',
    second: 'organization',
    between: r(String.raw`\s+(?:has\s+|had\s+|recently\s+)?(?:joined|joins|rejoined)\s+${THE}`),
  },
  {
    type: 'works_for',
    first: 'person',
    second: 'organization',
    between: r(
      String.raw`\s+(?:is|was|became|becomes|serves as|served as|has been)\s+(?:the\s+|a\s+|an\s+)?${TITLE}\s+(?:of|at|for)\s+${THE}`,
    ),
  },
  {
    type: 'works_for',
    first: 'organization',
    second: 'person',
    reversed: true,
    between: r(
      String.raw`\s+(?:has\s+|have\s+|had\s+)?(?:hired|hires|appointed|appoints|named|names|recruited|employs|employed)\s+(?:${TITLE}\s+)?`,
    ),
  },
  { type: 'works_for', first: 'organization', second: 'person', reversed: true, between: r(String.raw`(?:['’]s?)?\s+${TITLE},?\s+`) },
  {
    type: 'acquired',
    first: 'organization',
    second: 'organization',
    between: r(
      String.raw`\s+(?:has\s+|had\s+|will\s+|would\s+|agreed\s+to\s+|plans\s+to\s+|is\s+to\s+|to\s+)?(?:acquired|acquires|acquire|bought|buys|buy|purchased|purchases|purchase|took over|takes over|take over)\s+(?:the\s+|rival\s+|its\s+rival\s+)?`,
    ),
  },
  {
    type: 'acquired',
    first: 'organization',
    second: 'organization',
    between: r(String.raw`(?:['’]s?)?\s+(?:acquisition|purchase|takeover)\s+of\s+${THE}`),
  },
  {
    type: 'acquired',
    first: 'organization',
    second: 'organization',
    reversed: true,
    between: r(
      String.raw`\s*,?\s*(?:which\s+|now\s+)?(?:was\s+|were\s+|has been\s+|is being\s+|is\s+|will be\s+|had been\s+)?(?:acquired|bought|purchased|taken over)\s+by\s+${THE}`,
    ),
  },
  {
    type: 'located_in',
    first: 'organization',
    second: 'place',
    between: r(
      String.raw`\s*,?\s*(?:(?:which|that)\s+(?:is|are|was)\s+|(?:is|are|was|were)\s+|a\s+(?:[\w-]+\s+){0,3}?(?:company|firm|startup|bank|group|maker|manufacturer|provider)\s+)?(?:based|headquartered|located|registered|incorporated)\s+in\s+${THE}`,
    ),
  },
  {
    type: 'located_in',
    first: 'organization',
    second: 'place',
    between: r(
      String.raw`(?:['’]s?)?\s+(?:headquarters|head office|main office|offices?|hq|campus|plant|factory)\s+(?:(?:is|are|was|were)\s+)?(?:in|at)\s+${THE}`,
    ),
  },
  { type: 'located_in', first: 'organization', second: 'place', between: r(String.raw`\s+(?:of|in)\s+`) },
  { type: 'located_in', first: 'place', second: 'organization', reversed: true, between: r(String.raw`-based\s+`) },
];

/** How far apart (in characters) two mentions may be for the words between them to be read. */
const MAX_GAP = 80;
/** Distinct entities of a sentence paired by co_occurs; past this a sentence is a list, not a statement. */
const MAX_COOCCURRING = 24;
const PAYMENT_VERBS =
  /^(?:paid|pay|pays|paying|spent|spend|spends|spending|invested|invest|invests|bought|buy|buys|acquired|acquire|acquires|purchased|purchase|purchases|raised|raises|raise)$/;
// Where a clause begins, so that "Maria said that Acme paid $5" credits Acme, not Maria.
const CLAUSE_START = /\b(?:that|which|who|whom|whose|while|whereas|because|although|but)\b|[;:]/gi;

export function relationsOf(passages: readonly Passage[], mentions: EntityMention[], sentences: Sentence[]): EntityRelation[] {
  const relations: EntityRelation[] = [];
  for (const sentence of sentences) {
    const { text, page, start_ms, end_ms } = passages[sentence.passage]!;
    const typed: [RelationType, number, number][] = [];
    const inSentence = sentence.mentions;
    inSentence.forEach((a, i) => {
      for (const b of inSentence.slice(i + 1)) {
        const [first, second] = [mentions[a]!, mentions[b]!];
        if (second.start - first.end > MAX_GAP) break;
        const between = text.slice(first.end, second.start);
        const pattern = PATTERNS.find((p) => p.first === first.type && p.second === second.type && p.between.test(between));
        if (pattern) typed.push(pattern.reversed ? [pattern.type, b, a] : [pattern.type, a, b]);
      }
    });
    for (const target of inSentence) {
      const type = mentions[target]!.type;
      if (type !== 'date' && type !== 'money') continue;
      const link = subjectOf(text, sentence, mentions, target, type === 'date' ? ['person', 'organization'] : ['organization']);
      if (link) typed.push([type === 'date' ? 'dated' : PAYMENT_VERBS.test(link.verb) ? 'paid' : 'amount', link.source, target]);
    }
    const related = new Set(typed.map(([, s, t]) => pairKey(mentions, s, t)));
    const place = { passage: sentence.passage, start: sentence.start, end: sentence.end, page, start_ms, end_ms };
    for (const [type, source, target] of typed) relations.push({ type, source, target, ...place, extractor: 'pattern' });
    const distinct = firstOfEach(mentions, inSentence).slice(0, MAX_COOCCURRING);
    distinct.forEach((a, i) => {
      for (const b of distinct.slice(i + 1)) {
        if (!related.has(pairKey(mentions, a, b)))
          relations.push({ type: 'co_occurs', source: a, target: b, ...place, extractor: 'cooccurrence' });
      }
    });
  }
  return relations;
}

/**
 * The entity a date or amount belongs to: the first mention of an allowed type in the clause of the last verb
 * before the target ("Maria Lopez, CEO of Acme, announced on March 3" gives Maria Lopez).
 */
function subjectOf(
  text: string,
  sentence: Sentence,
  mentions: EntityMention[],
  target: number,
  types: EntityType[],
): { source: number; verb: string } | null {
  const at = mentions[target]!.start;
  const verb = sentence.verbs.filter((v) => v.end <= at).pop();
  if (!verb) return null;
  let clause = sentence.start;
  CLAUSE_START.lastIndex = 0;
  const before = text.slice(sentence.start, verb.start);
  for (let m = CLAUSE_START.exec(before); m; m = CLAUSE_START.exec(before)) clause = sentence.start + m.index + m[0].length;
  const source = sentence.mentions.find(
    (k) => types.includes(mentions[k]!.type) && mentions[k]!.start >= clause && mentions[k]!.end <= verb.start,
  );
  return source === undefined ? null : { source, verb: verb.word };
}

const entityKey = (m: EntityMention) => `${m.type}\u0000${m.canonical}`;
const pairKey = (mentions: EntityMention[], a: number, b: number) =>
  [entityKey(mentions[a]!), entityKey(mentions[b]!)].sort().join('\u0001');

/** The first mention of each distinct entity, in text order. */
function firstOfEach(mentions: EntityMention[], indexes: number[]): number[] {
  const seen = new Set<string>();
  return indexes.filter((k) => !seen.has(entityKey(mentions[k]!)) && seen.add(entityKey(mentions[k]!)));
}
