/**
 * A model asked a question of the platform's own (a judge's verdict, the relations a passage states) and told
 * to answer by calling one tool: the answer is that call's arguments, parsed, never text. The usage comes back
 * with the price in effect, for the caller to record with whatever it stores of the answer. A ModelCallError
 * reaches the caller unchanged.
 */
import type { CatalogueModel, ModelCatalogue, ModelPrice } from './catalogue.js';
import type { ModelGateway } from './gateway.js';
import type { TokenUsage, ToolSpec } from './messages.js';

export interface ToolCallQuestion {
  model: CatalogueModel;
  /** The system message: what the model does, and that it answers by calling `tool`. */
  instructions: string;
  /** The user message: what this question is about. */
  prompt: string;
  tool: ToolSpec;
  signal: AbortSignal;
  /** The whole call, first byte to last. */
  timeoutMs: number;
}

/** The call's arguments as JSON gave them (still to be checked), or why there are none. */
export type ToolCallArguments = { called: true; value: unknown } | { called: false; reason: string };

export interface ToolCallAnswer {
  arguments: ToolCallArguments;
  usage: TokenUsage;
  price: ModelPrice;
}

export async function askForToolCall(
  models: { catalogue: ModelCatalogue; gateway: ModelGateway },
  question: ToolCallQuestion,
): Promise<ToolCallAnswer> {
  const { model, tool } = question;
  const result = await models.gateway.call({
    model,
    messages: [
      { role: 'system', content: question.instructions },
      { role: 'user', content: question.prompt },
    ],
    tools: [tool],
    // The same question, the same answer, as far as the model allows.
    settings: { temperature: 0 },
    signal: question.signal,
    timeoutMs: question.timeoutMs,
  });
  const price = models.catalogue.priceAt(model, new Date());
  const call = result.message.tool_calls?.find((c) => c.name === tool.name);
  return {
    arguments: call ? parsed(call.arguments, tool.name) : { called: false, reason: `the model did not call ${tool.name}` },
    usage: result.usage,
    price,
  };
}

function parsed(json: string, tool: string): ToolCallArguments {
  try {
    return { called: true, value: JSON.parse(json) as unknown };
  } catch {
    return { called: false, reason: `the model's ${tool} call is not JSON` };
  }
}
