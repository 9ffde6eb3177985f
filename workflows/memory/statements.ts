/**
 * The offline memory engine: facts a person states about themselves, read from their own messages by rules. It
 * reads first-person statements only ("my email is …", "I live in …", "I don't like …"), skips questions and
 * conditionals, and answers each fact with the span of the message it came from, so that a memory always
 * cites the exact words it was learned from.
 *
 * Every attribute holds one value at a time: a later statement of another value contradicts the earlier one.
 * What may hold many (opinions, allergies, languages) names its object in the attribute (`opinion of tea`).
 */

export interface StatedFact {
  /** What the fact is about, folded: `name`, `email`, `lives in`, `opinion of tea`. */
  attribute: string;
  /** The value as stated. */
  value: string;
  /** The fact in words, about the subject (`lives in: Paris`). */
  statement: string;
  /** How sure the rule that read it is, in (0, 1]. */
  confidence: number;
  /** The statement's span in the message, in characters (Unicode code points), end exclusive. */
  start: number;
  end: number;
}

// Longer sentences are not read: the rules are for plain statements, and the time they take stays linear and small.
const MAX_SENTENCE_CHARS = 400;
const MAX_VALUE_CHARS = 120;
// "my … is": what is not a fact about the person.
const NOT_ATTRIBUTES = new Set([
  'question',
  'problem',
  'issue',
  'point',
  'guess',
  'concern',
  'bad',
  'pleasure',
  'turn',
  'answer',
  'request',
  'thought',
  'understanding',
  'hope',
  'fault',
  'goal',
  'plan',
  'mistake',
]);

interface Rule {
  pattern: RegExp;
  confidence: number;
  read(match: RegExpMatchArray): { attribute: string; value: string; statement: string } | null;
}

// A value runs to the end of its clause: a comma, "and", "but", "so", "because" or the sentence's end.
const VALUE = String.raw`([^,;:()"]{1,${MAX_VALUE_CHARS}}?)(?=\s*(?:,|;|\band\b|\bbut\b|\bso\b|\bbecause\b|\bthough\b|$))`;
const I_AM = String.raw`(?:i am|i'm|im)`;

// When and how long, said after a value ("Berlin last week", "green tea any more"): not part of it.
const TAIL =
  /\s+(?:(?:last|this|next) (?:week|month|year)|(?:since|for|from) [\p{L}\p{N} ]{1,30}|any ?more|now|too|as well|these days|nowadays|recently|again|yesterday|today|at the moment|for now)$/iu;

function withoutTail(text: string): string {
  let value = text.trim();
  for (let cut = value.replace(TAIL, ''); cut !== value && cut.length > 0; cut = value.replace(TAIL, '')) value = cut;
  return value;
}

const fold = (text: string) => text.toLowerCase().replace(/\s+/g, ' ').trim();
const favourite = (attribute: string) => attribute.replace(/\bfavorite\b/g, 'favourite');

const RULES: Rule[] = [
  {
    pattern: new RegExp(String.raw`\b(?:${I_AM} called|call me|my name's)\s+${VALUE}`, 'giu'),
    confidence: 0.9,
    read: (m) => ({ attribute: 'name', value: m[1]!, statement: `name: ${m[1]}` }),
  },
  {
    pattern: new RegExp(
      String.raw`\bmy ((?:[\p{L}'-]+ ){0,3}?[\p{L}'-]+) (?:is|are|was changed to|has changed to) (?:now )?${VALUE}`,
      'giu',
    ),
    confidence: 0.85,
    read: (m) => {
      const attribute = favourite(fold(m[1]!));
      if (NOT_ATTRIBUTES.has(attribute) || NOT_ATTRIBUTES.has(attribute.split(' ').at(-1)!)) return null;
      return { attribute, value: m[2]!, statement: `${attribute}: ${m[2]}` };
    },
  },
  {
    pattern: new RegExp(
      String.raw`\b(?:i live in|i(?: have|'ve)? moved to|i(?: have|'ve)? relocated to|${I_AM} (?:living|based) in)\s+${VALUE}`,
      'giu',
    ),
    confidence: 0.8,
    read: (m) => ({ attribute: 'lives in', value: m[1]!, statement: `lives in: ${m[1]}` }),
  },
  {
    pattern: new RegExp(String.raw`\bi (?:now )?work (?:at|for)\s+${VALUE}`, 'giu'),
    confidence: 0.8,
    read: (m) => ({ attribute: 'works at', value: m[1]!, statement: `works at: ${m[1]}` }),
  },
  {
    pattern: new RegExp(String.raw`\bi (?:now )?work as (?:an? )?${VALUE}`, 'giu'),
    confidence: 0.8,
    read: (m) => ({ attribute: 'occupation', value: m[1]!, statement: `occupation: ${m[1]}` }),
  },
  {
    pattern: new RegExp(String.raw`\b${I_AM} (\d{1,3}) years old\b`, 'giu'),
    confidence: 0.85,
    read: (m) => ({ attribute: 'age', value: m[1]!, statement: `age: ${m[1]}` }),
  },
  {
    pattern: new RegExp(String.raw`\b${I_AM} allergic to\s+${VALUE}`, 'giu'),
    confidence: 0.85,
    read: (m) => ({ attribute: `allergic to ${fold(m[1]!)}`, value: 'yes', statement: `allergic to ${m[1]}` }),
  },
  {
    pattern: new RegExp(String.raw`\bi (?:do not|don't|no longer|never) (?:like|love|enjoy|want)\s+${VALUE}`, 'giu'),
    confidence: 0.75,
    read: (m) => ({ attribute: `opinion of ${fold(m[1]!)}`, value: 'dislikes', statement: `dislikes ${m[1]}` }),
  },
  {
    pattern: new RegExp(String.raw`\bi (?:dislike|hate|can't stand|cannot stand)\s+${VALUE}`, 'giu'),
    confidence: 0.75,
    read: (m) => ({ attribute: `opinion of ${fold(m[1]!)}`, value: 'dislikes', statement: `dislikes ${m[1]}` }),
  },
  {
    pattern: new RegExp(String.raw`\bi (?:really )?(?:like|love|enjoy|prefer)\s+${VALUE}`, 'giu'),
    confidence: 0.7,
    read: (m) => ({ attribute: `opinion of ${fold(m[1]!)}`, value: 'likes', statement: `likes ${m[1]}` }),
  },
];

/**
 * The sentences of a text with where each starts (in UTF-16 units): split after . ! ? followed by a space, and at
 * line ends (`ada@example.com` and `3.5` stay whole).
 */
function sentencesOf(text: string): { text: string; at: number }[] {
  const sentences: { text: string; at: number }[] = [];
  const boundary = /[^\n]*?[.!?]+(?=\s|$)|[^\n]+/g;
  for (let m = boundary.exec(text); m; m = boundary.exec(text)) sentences.push({ text: m[0], at: m.index });
  return sentences;
}

const codePoints = (text: string, upTo: number) => [...text.slice(0, upTo)].length;

/** The facts the message states about the person who wrote it, in the order they are stated. */
export function factsIn(text: string): StatedFact[] {
  const facts: StatedFact[] = [];
  for (const sentence of sentencesOf(text)) {
    const body = sentence.text.trim();
    if (body.length === 0 || body.length > MAX_SENTENCE_CHARS) continue;
    // Questions and conditionals state nothing.
    if (body.endsWith('?') || /^(?:if|when|whether|unless|suppose)\b/i.test(body)) continue;
    const plain = sentence.text.replace(/[.!]+\s*$/, '');
    const taken: [number, number][] = [];
    for (const rule of RULES)
      for (const match of plain.matchAll(rule.pattern)) {
        // Each part read without its tail of when and how long.
        const parts = Object.assign(
          match.map((part, i) => (i === 0 || part === undefined ? part : withoutTail(part))),
          { index: match.index },
        ) as RegExpMatchArray;
        const read = rule.read(parts);
        if (!read) continue;
        const value = read.value.trim();
        const attribute = read.attribute;
        if (value.length === 0 || /^(?:a|an|the|it|that|this|not|sure)$/i.test(value)) continue;
        const from = sentence.at + match.index;
        const to = sentence.at + match.index + match[0].trimEnd().length;
        // A span another rule already read ("I don't like" is not also "I like").
        if (taken.some(([a, b]) => from < b && a < to)) continue;
        taken.push([from, to]);
        facts.push({
          attribute,
          value,
          statement: read.statement.trim(),
          confidence: rule.confidence,
          start: codePoints(text, from),
          end: codePoints(text, to),
        });
      }
  }
  return facts.sort((a, b) => a.start - b.start);
}

/** A value as two statements of it compare: folded case and spacing, no closing punctuation. */
export function valueKey(value: string): string {
  return fold(value).replace(/[.!,;:]+$/, '');
}
