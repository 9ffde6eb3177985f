/** A model call over Anthropic's Messages API, streamed. */
import type Anthropic from '@anthropic-ai/sdk';
import type {
  Base64ImageSource,
  ContentBlockParam,
  MessageParam,
  StopReason,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import { ModelCallError } from '../call-error.js';
import type { ChatMessage, ToolCall, ToolSpec } from '../messages.js';
import {
  imageOf,
  outputAllowance,
  tokenCount,
  usageOf,
  type FinishReason,
  type LoadedImages,
  type ModelCallRequest,
  type ModelCallResult,
} from '../model-call.js';

function parsedArguments(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    // The model produced arguments that do not parse; the tool result already said so.
    return {};
  }
}

/**
 * The conversation in Anthropic's shape: system messages become `system`, tool results become
 * `tool_result` blocks of a user turn, and consecutive results share one turn, as the API requires. A message
 * with nothing in it (a run that answered nothing, an agent without instructions) is left out: Anthropic
 * refuses an empty one, where other providers take it.
 */
function toAnthropicConversation(messages: ChatMessage[], images: LoadedImages): { system: string | undefined; messages: MessageParam[] } {
  const system: string[] = [];
  const turns: MessageParam[] = [];
  let openResults: ToolResultBlockParam[] | null = null;
  for (const message of messages) {
    if (message.role === 'tool') {
      const result: ToolResultBlockParam = {
        type: 'tool_result',
        tool_use_id: message.tool_call_id,
        content: message.content,
        ...(message.is_error ? { is_error: true } : {}),
      };
      if (openResults) openResults.push(result);
      else turns.push({ role: 'user', content: (openResults = [result]) });
      continue;
    }
    openResults = null;
    if (message.role === 'system') {
      if (message.content !== '') system.push(message.content);
    } else if (message.role === 'user') {
      const content =
        typeof message.content === 'string'
          ? message.content
          : message.content.filter((part) => part.type !== 'text' || part.text !== '').map((part) => userBlock(part, images));
      if (content.length > 0) turns.push({ role: 'user', content });
    } else {
      const blocks = assistantBlocks(message);
      if (blocks.length > 0) turns.push({ role: 'assistant', content: blocks });
    }
  }
  return { system: system.length ? system.join('\n\n') : undefined, messages: turns };
}

function userBlock(
  part: Exclude<Extract<ChatMessage, { role: 'user' }>['content'], string>[number],
  images: LoadedImages,
): ContentBlockParam {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const image = imageOf(images, part);
  if ('leftOut' in image) return { type: 'text', text: image.leftOut };
  const { base64, media_type } = image;
  // Anthropic takes JPEG, PNG, GIF and WebP; anything else it refuses with a 400, which says so.
  return { type: 'image', source: { type: 'base64', media_type: media_type as Base64ImageSource['media_type'], data: base64 } };
}

function assistantBlocks(message: Extract<ChatMessage, { role: 'assistant' }>): ContentBlockParam[] {
  const text: TextBlockParam[] = message.content ? [{ type: 'text', text: message.content }] : [];
  const calls = (message.tool_calls ?? []).map((call): ContentBlockParam => ({
    type: 'tool_use',
    id: call.id,
    name: call.name,
    input: parsedArguments(call.arguments),
  }));
  return [...text, ...calls];
}

const toAnthropicTool = (tool: ToolSpec): Tool => ({
  name: tool.name,
  description: tool.description,
  input_schema: { type: 'object', ...tool.parameters },
});

function finishReasonOf(reason: StopReason | null): FinishReason {
  switch (reason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

export async function callAnthropic(
  client: Anthropic,
  request: ModelCallRequest,
  images: LoadedImages,
  signal: AbortSignal,
): Promise<ModelCallResult> {
  const { settings, model } = request;
  const conversation = toAnthropicConversation(request.messages, images);
  const { data: stream, request_id } = await client.messages
    .create(
      {
        model: model.provider_model,
        max_tokens: outputAllowance(model, settings),
        messages: conversation.messages,
        ...(conversation.system === undefined ? {} : { system: conversation.system }),
        ...(request.tools.length ? { tools: request.tools.map(toAnthropicTool) } : {}),
        ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
        ...(settings.top_p === undefined ? {} : { top_p: settings.top_p }),
        stream: true,
      },
      { signal },
    )
    .withResponse();

  let text = '';
  // Content blocks by their index in the message; only text and tool_use blocks are ours.
  const calls = new Map<number, ToolCall>();
  let stopReason: StopReason | null = null;
  let stopped = false;
  const usage = { input: 0, cacheRead: 0, cacheCreation: 0, output: 0 };
  const takeUsage = (reported: {
    input_tokens?: number | null;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
    output_tokens?: number | null;
  }) => {
    // message_delta carries cumulative counts; a null one is "unchanged".
    const count = (n: number | null | undefined, before: number) => (n === null || n === undefined ? before : tokenCount(n));
    usage.input = count(reported.input_tokens, usage.input);
    usage.cacheRead = count(reported.cache_read_input_tokens, usage.cacheRead);
    usage.cacheCreation = count(reported.cache_creation_input_tokens, usage.cacheCreation);
    usage.output = count(reported.output_tokens, usage.output);
  };
  for await (const event of stream) {
    switch (event.type) {
      case 'message_start':
        takeUsage(event.message.usage);
        break;
      case 'content_block_start':
        if (event.content_block.type === 'tool_use')
          calls.set(event.index, { id: event.content_block.id, name: event.content_block.name, arguments: '' });
        break;
      case 'content_block_delta':
        if (event.delta.type === 'text_delta') {
          text += event.delta.text;
          request.onTextDelta?.(event.delta.text);
        } else if (event.delta.type === 'input_json_delta') {
          const call = calls.get(event.index);
          if (call) call.arguments += event.delta.partial_json;
        }
        break;
      case 'message_delta':
        stopReason = event.delta.stop_reason ?? stopReason;
        takeUsage(event.usage);
        break;
      case 'message_stop':
        stopped = true;
        break;
    }
  }
  // The SDK ends an aborted stream quietly rather than throwing.
  signal.throwIfAborted();
  if (!stopped) throw new ModelCallError('unavailable', 'anthropic ended the stream before the model finished');

  // A tool called without arguments streams no JSON at all.
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => ({ ...call, arguments: call.arguments || '{}' }));
  return {
    message: { role: 'assistant', content: text, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
    usage: usageOf(usage.input + usage.cacheRead + usage.cacheCreation, usage.output, usage.cacheRead),
    finish_reason: finishReasonOf(stopReason),
    ...(request_id ? { provider_request_id: request_id } : {}),
  };
}
