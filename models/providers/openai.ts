/** A model call over OpenAI's Chat Completions API (OpenAI, or any OpenAI-compatible server), streamed. */
import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { ModelCallError } from '../call-error.js';
import type { ChatMessage, TokenUsage, ToolCall, ToolSpec } from '../messages.js';
import { imageOf, usageOf, type FinishReason, type LoadedImages, type ModelCallRequest, type ModelCallResult } from '../model-call.js';

function toOpenAiMessage(message: ChatMessage, images: LoadedImages): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      if (typeof message.content === 'string') return { role: 'user', content: message.content };
      return {
        role: 'user',
        content: message.content.map((part): ChatCompletionContentPart => {
          if (part.type === 'text') return { type: 'text', text: part.text };
          const image = imageOf(images, part);
          if ('leftOut' in image) return { type: 'text', text: image.leftOut };
          return { type: 'image_url', image_url: { url: `data:${image.media_type};base64,${image.base64}` } };
        }),
      };
    case 'assistant':
      return {
        role: 'assistant',
        // A turn that only calls tools has no text; the API wants null rather than an empty string then.
        content: message.content || (message.tool_calls?.length ? null : ''),
        ...(message.tool_calls?.length
          ? {
              tool_calls: message.tool_calls.map((call, index) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
                // Sent back as it came (a field of Gemini's, beside OpenAI's own).
                ...(message.tool_call_extras?.[index] ? { extra_content: message.tool_call_extras[index] } : {}),
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.tool_call_id, content: message.content };
  }
}

const toOpenAiTool = (tool: ToolSpec): ChatCompletionTool => ({
  type: 'function',
  function: { name: tool.name, description: tool.description, parameters: tool.parameters },
});

function finishReasonOf(reason: ChatCompletionChunk.Choice['finish_reason'], calledTools: boolean): FinishReason {
  if (reason === 'length' || reason === 'content_filter') return reason;
  // Some OpenAI-compatible servers end a turn of tool calls with "stop".
  return reason === 'tool_calls' || reason === 'function_call' || calledTools ? 'tool_calls' : 'stop';
}

/**
 * The tool calls of a streamed answer, put together from their deltas. OpenAI sends a call's id and name in its
 * first delta and its arguments in pieces after, each delta with the call's `index`. Servers that speak the
 * format loosely are read as they mean it: Gemini's OpenAI-compatible endpoint sends no `index` (a delta with a
 * new id begins a call, one without continues the last), and some proxies number every call 0 (a new id at an
 * index begins a call, and the index's later deltas continue that one).
 */
class StreamedCalls {
  readonly all: ToolCall[] = [];
  // What the server sent beside each call to have it back (`extra_content`), by call.
  private readonly extras = new Map<ToolCall, Record<string, unknown>>();
  // The server's index of each call, to the call's place among ours.
  private readonly byIndex = new Map<number, ToolCall>();
  private last: ToolCall | undefined;

  /** `extra_content` of each call, by position, when any call had one. */
  get extraContents(): (Record<string, unknown> | null)[] | undefined {
    return this.extras.size > 0 ? this.all.map((call) => this.extras.get(call) ?? null) : undefined;
  }

  callOf(delta: { index?: number | null; id?: string | null; extra_content?: unknown }): ToolCall {
    const index = typeof delta.index === 'number' ? delta.index : undefined;
    const call = this.continued(delta.id, index) ?? this.begin(delta.id ?? '');
    if (index !== undefined) this.byIndex.set(index, call);
    this.last = call;
    const extra = delta.extra_content;
    if (extra !== null && typeof extra === 'object' && !Array.isArray(extra))
      this.extras.set(call, { ...this.extras.get(call), ...(extra as Record<string, unknown>) });
    return call;
  }

  /** The call a delta goes on with: the one of its id, else of its index, else (no index) the last one. */
  private continued(id: string | null | undefined, index: number | undefined): ToolCall | undefined {
    if (id) return this.all.find((known) => known.id === id);
    return index === undefined ? this.last : this.byIndex.get(index);
  }

  private begin(id: string): ToolCall {
    const call = { id, name: '', arguments: '' };
    this.all.push(call);
    return call;
  }
}

export async function callOpenAi(
  client: OpenAI,
  request: ModelCallRequest,
  images: LoadedImages,
  signal: AbortSignal,
): Promise<ModelCallResult> {
  const { settings } = request;
  const { data: stream, request_id } = await client.chat.completions
    .create(
      {
        model: request.model.provider_model,
        messages: request.messages.map((message) => toOpenAiMessage(message, images)),
        ...(request.tools.length ? { tools: request.tools.map(toOpenAiTool) } : {}),
        ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
        ...(settings.top_p === undefined ? {} : { top_p: settings.top_p }),
        ...(settings.max_output_tokens === undefined ? {} : { max_completion_tokens: settings.max_output_tokens }),
        stream: true,
        stream_options: { include_usage: true },
      },
      { signal },
    )
    .withResponse();

  let text = '';
  const calls = new StreamedCalls();
  let finish: ChatCompletionChunk.Choice['finish_reason'] = null;
  // A server that ignores include_usage reports nothing; the call is then recorded as free.
  let usage: TokenUsage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0 };
  for await (const chunk of stream) {
    if (chunk.usage) {
      usage = usageOf(chunk.usage.prompt_tokens, chunk.usage.completion_tokens, chunk.usage.prompt_tokens_details?.cached_tokens);
    }
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.content) {
      text += choice.delta.content;
      request.onTextDelta?.(choice.delta.content);
    }
    for (const delta of choice.delta.tool_calls ?? []) {
      const call = calls.callOf(delta);
      if (delta.function?.name) call.name += delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  // The SDK ends an aborted stream quietly rather than throwing.
  signal.throwIfAborted();
  if (finish === null) throw new ModelCallError('unavailable', 'openai ended the stream before the model finished');

  const toolCalls = calls.all;
  const extras = calls.extraContents;
  return {
    message: {
      role: 'assistant',
      content: text,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      ...(extras ? { tool_call_extras: extras } : {}),
    },
    usage,
    finish_reason: finishReasonOf(finish, toolCalls.length > 0),
    ...(request_id ? { provider_request_id: request_id } : {}),
  };
}
