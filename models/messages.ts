/**
 * The conversation as the gateway sees it, independent of any provider's wire format. Each provider
 * module translates it to and from its own SDK's types. Images are referenced by file id and loaded
 * only when a call is made, so no image bytes travel through workflow histories.
 */

export type ContentPart = { type: 'text'; text: string } | { type: 'image'; file_id: string; media_type: string };

export interface ToolCall {
  /** The provider's id for the call, echoed back with its result. */
  id: string;
  name: string;
  /** JSON text, exactly as the model produced it (it may not parse). */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ContentPart[] }
  | {
      role: 'assistant';
      content: string;
      tool_calls?: ToolCall[];
      /**
       * What an OpenAI-compatible server sent beside each of `tool_calls` (by position) to have it sent back with
       * that call (`extra_content`: Gemini's thought signature, without which Gemini 3 refuses the next turn). Kept
       * with the step for the conversation, never shown.
       */
      tool_call_extras?: (Record<string, unknown> | null)[];
    }
  | { role: 'tool'; tool_call_id: string; name: string; content: string; is_error?: boolean };

/** A tool as offered to a model: a name, what it does, and a JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  /** Input tokens served from the provider's prompt cache (a subset of input_tokens). */
  cached_tokens: number;
}

export interface ModelSettings {
  temperature?: number;
  top_p?: number;
  max_output_tokens?: number;
}
