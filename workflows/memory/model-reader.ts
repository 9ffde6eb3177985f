/**
 * Reading facts with a model, when AGENTPLANE_MEMORY_MODEL names one: the subject's messages of a run, numbered,
 * and a `record_facts` tool the model answers through. A fact is kept only if its quote is found, word for word,
 * in the message it names: the quote is its source's span, so a memory still cites the exact words it came from
 * however the model paraphrases its statement.
 */
import type { CatalogueModel, ModelCatalogue } from '../../models/catalogue.js';
import type { ModelGateway } from '../../models/gateway.js';
import { askForToolCall, type ToolCallAnswer } from '../../models/tool-call-question.js';
import type { StatedFact } from './statements.js';

export interface MemoryReader {
  catalogue: ModelCatalogue;
  gateway: ModelGateway;
  /** The model's id in the catalogue. */
  id: string;
}

const TOOL = 'record_facts';
// What one call reads and keeps, at most.
const MAX_PROMPT_CHARS = 24_000;
const MAX_FACTS = 50;
const MAX_ATTRIBUTE_CHARS = 80;
const MAX_VALUE_CHARS = 200;

const PARAMETERS = {
  type: 'object',
  properties: {
    facts: {
      type: 'array',
      maxItems: MAX_FACTS,
      items: {
        type: 'object',
        properties: {
          message: { type: 'integer', minimum: 1, description: 'The number of the message that states it.' },
          attribute: {
            type: 'string',
            description:
              "What the fact is about, short and lower case: 'name', 'email', 'lives in', 'works at', 'favourite colour'. " +
              "For likes, dislikes and allergies name the object: 'opinion of green tea', 'allergic to peanuts'.",
          },
          value: { type: 'string', description: "The value: 'Ada', 'Berlin'; for an opinion 'likes' or 'dislikes'; for an allergy 'yes'." },
          quote: { type: 'string', description: 'The words of the message that state it, copied exactly.' },
          confidence: { type: 'number', minimum: 0, maximum: 1 },
        },
        required: ['message', 'attribute', 'value', 'quote', 'confidence'],
      },
    },
  },
  required: ['facts'],
};

const SYSTEM =
  'You read messages a person wrote to an assistant and list the lasting facts they state about themselves: name, contact ' +
  'details, where they live and work, preferences, allergies, account or order numbers. Ignore questions, hypotheticals, ' +
  'and anything about other people. Call record_facts exactly once; with no such fact, call it with an empty list.';

export interface ReadMessage {
  content: string;
}

export interface ModelReading {
  /** Facts by the index of the message (in the order given) that states them. */
  facts: { message: number; fact: StatedFact }[];
  answer: ToolCallAnswer;
  model: CatalogueModel;
}

export function memoryModelOf(reader: MemoryReader): CatalogueModel | undefined {
  return reader.catalogue.find(reader.id);
}

/** Asks the model; a ModelCallError reaches the caller (it says whether trying again can help). */
export async function readWithModel(
  reader: MemoryReader,
  model: CatalogueModel,
  messages: ReadMessage[],
  signal: AbortSignal,
): Promise<ModelReading> {
  const prompt = messages
    .map((m, i) => `Message ${i + 1}:\n${m.content}`)
    .join('\n\n')
    .slice(0, MAX_PROMPT_CHARS);
  const answer = await askForToolCall(reader, {
    model,
    instructions: SYSTEM,
    prompt,
    tool: { name: TOOL, description: 'Records the facts the person stated about themselves.', parameters: PARAMETERS },
    signal,
    timeoutMs: 120_000,
  });
  return { facts: answer.arguments.called ? factsIn(answer.arguments.value, messages) : [], answer, model };
}

/** The model's facts whose quote is in the message it names, each with that span; the rest are dropped. */
function factsIn(value: unknown, messages: ReadMessage[]): ModelReading['facts'] {
  const listed = (value as { facts?: unknown })?.facts;
  if (!Array.isArray(listed)) return [];
  const kept: ModelReading['facts'] = [];
  for (const item of listed.slice(0, MAX_FACTS)) {
    const { message, attribute, value: stated, quote, confidence } = (item ?? {}) as Record<string, unknown>;
    if (typeof message !== 'number' || !Number.isInteger(message) || message < 1 || message > messages.length) continue;
    if (typeof attribute !== 'string' || typeof stated !== 'string' || typeof quote !== 'string') continue;
    const name = attribute.trim().toLowerCase().replace(/\s+/g, ' ').slice(0, MAX_ATTRIBUTE_CHARS);
    const said = stated.trim().slice(0, MAX_VALUE_CHARS);
    const words = quote.trim();
    if (!name || !said || !words) continue;
    const content = messages[message - 1]!.content;
    const at = content.indexOf(words);
    if (at === -1) continue;
    const start = [...content.slice(0, at)].length;
    kept.push({
      message: message - 1,
      fact: {
        attribute: name,
        value: said,
        statement: `${name}: ${said}`,
        confidence: typeof confidence === 'number' && confidence > 0 && confidence <= 1 ? confidence : 0.5,
        start,
        end: start + [...words].length,
      },
    });
  }
  return kept;
}
