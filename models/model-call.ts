/** One call to a model, as the gateway takes it and answers it, whichever provider serves it. */
import type { CatalogueModel } from './catalogue.js';
import type { ChatMessage, ModelSettings, TokenUsage, ToolSpec } from './messages.js';

export interface LoadedImage {
  data: Buffer;
  media_type: string;
}

export interface ModelCallRequest {
  model: CatalogueModel;
  messages: ChatMessage[];
  tools: ToolSpec[];
  settings: ModelSettings;
  /** Aborting it ends the provider request; the call then rejects with kind `cancelled`. */
  signal: AbortSignal;
  /**
   * Reads an image part's bytes when the call is made; its errors reach the caller unchanged. Needed only by
   * a call whose messages carry images.
   */
  loadImage?(fileId: string): Promise<LoadedImage>;
  /** Each piece of text as the provider streams it, for a caller that shows it as it comes. */
  onTextDelta?(text: string): void;
  /** The whole call, first byte to last; past it the call rejects with kind `timeout`. */
  timeoutMs?: number;
}

export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter';

export interface ModelCallResult {
  message: AssistantMessage;
  usage: TokenUsage;
  finish_reason: FinishReason;
  /** The provider's id for the request (its request-id header), for support cases. */
  provider_request_id?: string;
}

/** Image bytes by file id, loaded before the provider is called; an image left out of the call is absent. */
export type LoadedImages = ReadonlyMap<string, LoadedImage>;

/**
 * A token count as a provider reported it, as the usage ledger can keep it: a whole number from 0. A server that
 * speaks the wire format loosely may leave a count out, send null, a negative number or a fraction: kept as sent,
 * it would fail the write that records the call (and the call would be made again) or book a negative cost. A
 * count that is not a number, or not above 0, is 0; a fraction is rounded.
 */
export function tokenCount(reported: unknown): number {
  if (typeof reported !== 'number' || !Number.isFinite(reported) || reported <= 0) return 0;
  return Math.min(Math.round(reported), Number.MAX_SAFE_INTEGER);
}

/** Usage as the ledger keeps it: cached input tokens are part of the input, never more than all of it. */
export function usageOf(input: unknown, output: unknown, cached: unknown): TokenUsage {
  const input_tokens = tokenCount(input);
  return { input_tokens, output_tokens: tokenCount(output), cached_tokens: Math.min(tokenCount(cached), input_tokens) };
}

/**
 * The image bytes one call carries at most: base64 makes about 27 MB of them, under Anthropic's 32 MB request
 * limit (OpenAI's is 50 MB). An image that would take a call past it is left out, and the model told so.
 */
export const MAX_IMAGE_BYTES_PER_CALL = 20_000_000;

export async function loadImages(request: ModelCallRequest): Promise<LoadedImages> {
  const ids = new Set<string>();
  for (const message of request.messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const part of message.content) if (part.type === 'image') ids.add(part.file_id);
  }
  const loaded = new Map<string, LoadedImage>();
  if (ids.size === 0) return loaded;
  const { loadImage } = request;
  if (!loadImage) throw new Error('the call carries images, and nothing to read them with');
  let carried = 0;
  for (const id of ids) {
    const image = await loadImage(id);
    if (carried + image.data.length > MAX_IMAGE_BYTES_PER_CALL) continue;
    carried += image.data.length;
    loaded.set(id, image);
  }
  return loaded;
}

/**
 * The image as a provider receives it: base64, with the type the loader reported (else the part's); or, for an
 * image left out of the call, the text that says so.
 */
export function imageOf(
  images: LoadedImages,
  part: { file_id: string; media_type: string },
): { base64: string; media_type: string } | { leftOut: string } {
  const image = images.get(part.file_id);
  if (!image)
    return {
      leftOut: `[The image of file ${part.file_id} is left out: one model call carries at most ${MAX_IMAGE_BYTES_PER_CALL / 1e6} MB of images.]`,
    };
  return { base64: image.data.toString('base64'), media_type: image.media_type || part.media_type };
}

// Anthropic requires max_tokens; without a setting, a model's full output allowance (64K and more) would
// let one call run for many minutes, so its default is capped.
const ANTHROPIC_DEFAULT_MAX_TOKENS = 4_096;

/** The most output tokens a call may bring: its setting, or what its provider allows without one. */
export function outputAllowance(model: CatalogueModel, settings: ModelSettings): number {
  if (settings.max_output_tokens !== undefined) return settings.max_output_tokens;
  const most = model.capabilities.max_output_tokens;
  return model.provider === 'anthropic' ? Math.min(most, ANTHROPIC_DEFAULT_MAX_TOKENS) : most;
}

/** What a provider may count for an image part, at most (the largest any of them charges). */
export const IMAGE_INPUT_TOKENS = 6_000;
// A message's or tool's framing in the provider's template, and the text a provider adds when tools are offered.
const FRAMING_TOKENS = 16;
const TOOLS_PREAMBLE_TOKENS = 1_000;

/**
 * The most input tokens a call may count: a token stands for at least one byte of text, so the bytes of the
 * messages and tools as JSON (their quoting more than covers the names a template adds), plus each one's framing
 * and each image's most.
 */
export function inputTokenBound(messages: ChatMessage[], tools: ToolSpec[]): number {
  let images = 0;
  for (const message of messages)
    if (message.role === 'user' && Array.isArray(message.content)) images += message.content.filter((part) => part.type === 'image').length;
  return (
    Buffer.byteLength(JSON.stringify(messages)) +
    Buffer.byteLength(JSON.stringify(tools)) +
    FRAMING_TOKENS * (messages.length + tools.length) +
    (tools.length > 0 ? TOOLS_PREAMBLE_TOKENS : 0) +
    images * IMAGE_INPUT_TOKENS
  );
}
