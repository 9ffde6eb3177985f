/**
 * The one way the platform calls a model: provider-neutral messages in, one assistant message, its usage
 * and why it stopped out, text streamed as it arrives. Failures are ModelCallErrors that say whether
 * trying again can help; the SDKs never retry on their own, so every attempt is the caller's to record.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { classifyFailure, ModelCallError, type CallEnding } from './call-error.js';
import type { ModelCatalogue } from './catalogue.js';
import { loadImages, type ModelCallRequest, type ModelCallResult } from './model-call.js';
import { anthropicClient } from './providers/anthropic-client.js';
import { callAnthropic } from './providers/anthropic.js';
import { openAiClient } from './providers/openai-client.js';
import { callOpenAi } from './providers/openai.js';
import { storableJson, storableText } from './storable-text.js';
import type { AssistantMessage } from './model-call.js';

export { ModelCallError, type ModelCallErrorKind } from './call-error.js';
export type { AssistantMessage, FinishReason, LoadedImage, ModelCallRequest, ModelCallResult } from './model-call.js';

export class ModelGateway {
  private openAi?: Promise<OpenAI>;
  private anthropic?: Promise<Anthropic>;

  constructor(
    private readonly catalogue: ModelCatalogue,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  async call(request: ModelCallRequest): Promise<ModelCallResult> {
    const { model } = request;
    if (!this.catalogue.configured(model.provider)) {
      throw new ModelCallError(
        'not_configured',
        `model ${model.id} is served by ${model.provider}, which is not configured: set ${this.catalogue.missingSetting(model.provider)}`,
      );
    }
    if (request.signal.aborted) throw new ModelCallError('cancelled', `the ${model.provider} call was cancelled`);
    const images = await loadImages(request);

    // One controller ends the provider request for either reason; `ending` remembers which it was.
    const controller = new AbortController();
    let ending: CallEnding = null;
    const end = (why: Exclude<CallEnding, null>) => {
      ending ??= why;
      controller.abort();
    };
    const cancel = () => end('cancelled');
    request.signal.addEventListener('abort', cancel, { once: true });
    const deadline = request.timeoutMs === undefined ? undefined : setTimeout(() => end('timeout'), request.timeoutMs);
    // What the provider answers is kept, streamed and recorded as the platform can store it (storable-text.ts).
    const deltas = request.onTextDelta && storableDeltas(request.onTextDelta);
    const storing: ModelCallRequest = deltas ? { ...request, onTextDelta: deltas.push } : request;
    try {
      const result =
        model.provider === 'openai'
          ? await callOpenAi(await (this.openAi ??= openAiClient(this.env)), storing, images, controller.signal)
          : await callAnthropic(await (this.anthropic ??= anthropicClient(this.env)), storing, images, controller.signal);
      deltas?.end();
      return { ...result, message: storableMessage(result.message) };
    } catch (err) {
      throw await classifyFailure(err, model.provider, ending);
    } finally {
      clearTimeout(deadline);
      request.signal.removeEventListener('abort', cancel);
    }
  }
}

function storableMessage(message: AssistantMessage): AssistantMessage {
  const { content, tool_calls, tool_call_extras } = message;
  return {
    ...message,
    content: storableText(content),
    ...(tool_calls && {
      tool_calls: tool_calls.map((call) => ({
        ...call,
        id: storableText(call.id),
        name: storableText(call.name),
        arguments: storableArguments(storableText(call.arguments)),
      })),
    }),
    ...(tool_call_extras && { tool_call_extras: tool_call_extras.map(storableExtra) }),
  };
}

/** What a server sent beside a call to have it back, as it can be kept; one nested past what can be walked is not kept. */
function storableExtra(extra: Record<string, unknown> | null): Record<string, unknown> | null {
  try {
    return extra && storableJson(extra);
  } catch (err) {
    if (err instanceof RangeError) return null;
    throw err;
  }
}

/**
 * Text deltas passed on as they can be stored. A delta that ends in the first half of a surrogate pair (a server
 * cutting its text by UTF-16 units between an emoji's two halves) keeps it back for the next delta, which may
 * begin with the other half; a half that stays alone becomes U+FFFD, as in the answer's text.
 */
function storableDeltas(onTextDelta: (text: string) => void) {
  let held = '';
  const pass = (text: string) => {
    const kept = storableText(text);
    if (kept) onTextDelta(kept);
  };
  return {
    push: (delta: string) => {
      const text = held + delta;
      const last = text.charCodeAt(text.length - 1);
      const endsInFirstHalf = last >= 0xd800 && last <= 0xdbff;
      held = endsInFirstHalf ? text.slice(-1) : '';
      pass(endsInFirstHalf ? text.slice(0, -1) : text);
    },
    end: () => {
      pass(held);
      held = '';
    },
  };
}

// A JSON escape of NUL or of half of a surrogate pair.
const UNSTORABLE_ESCAPE = /\\u(0000|d[89a-f])/i;

/**
 * Arguments as JSON text whose strings, parsed, can be stored too (storable-text.ts): a `\u0000` or a lone
 * `\ud83d` escape becomes what cannot be when a tool, the judge or the memory reader reads them, and what they
 * read is stored. Arguments without such an escape, or that are not JSON (the tool says so to the model), are
 * left as they are.
 */
function storableArguments(text: string): string {
  if (!UNSTORABLE_ESCAPE.test(text)) return text;
  try {
    return JSON.stringify(storableJson(JSON.parse(text)));
  } catch {
    // Not JSON, or nested past what the parser can walk: the tool's own checks refuse it.
    return text;
  }
}
