/**
 * A model that does what its prompt tells it, as a tenant steers a real model by writing the prompt. An
 * input that is a JSON `ModelOrders` makes it call a tool with the arguments given (`times` calls in
 * parallel) or start an answer it never finishes; once the conversation holds a tool result it answers
 * `after tools`; any other input is answered with the usual reply.
 */
import type { ReplyRule, ScriptedReply } from './scripted-server.js';

export interface ModelOrders {
  call?: { name: string; arguments: Record<string, unknown>; times?: number };
  /** Stream a word, then hold the answer open until the caller goes away. */
  hang?: true;
}

/** The run input that makes the model carry out these orders. */
export const ordering = (orders: ModelOrders): string => JSON.stringify(orders);

interface SentMessage {
  role?: string;
  content?: unknown;
}

function ordersIn(content: unknown): ModelOrders | null {
  if (typeof content !== 'string' || !content.startsWith('{')) return null;
  try {
    return JSON.parse(content) as ModelOrders;
  } catch {
    return null;
  }
}

export function promptedReplies(usual: ScriptedReply): ReplyRule {
  return (body) => {
    const messages = (Array.isArray(body.messages) ? body.messages : []) as SentMessage[];
    if (messages.at(-1)?.role === 'tool') return { text: ['after tools'], usage: { input: 20, output: 2 } };
    const orders = ordersIn(messages.filter((m) => m.role === 'user').at(-1)?.content);
    if (orders?.hang) return { text: ['…'], hang: true };
    if (orders?.call) {
      const call = { name: orders.call.name, arguments: JSON.stringify(orders.call.arguments) };
      return { tool_calls: Array.from({ length: orders.call.times ?? 1 }, () => call), usage: { input: 20, output: 10 } };
    }
    return usual;
  };
}
