/**
 * Replay: an experiment's run answers its tool calls from the calls its item's source run recorded (same tool,
 * same arguments) and sends nothing to a tool. A call that reaches outside (an HTTP, MCP or A2A tool) with no
 * recorded answer is a replay miss, which ends the run; a built-in tool (read_file, search_context) not recorded
 * reads the platform's own records, as in any run. The tools of MCP servers and A2A agents are offered as the
 * source run was offered them, so no tool server is asked for its list either.
 */
import type { Queryable } from '../../records/db.js';
import { transaction, type Db } from '../../records/db.js';
import { replayAnswer, type ToolCallSnapshot } from '../../records/datasets.js';
import { replayedItemOf } from '../../records/experiments.js';
import { beginStep, completeToolStep, failStep } from '../../records/run-steps.js';
import type { RunError, RunRecord } from '../../records/runs.js';
import type { AgentDefinition } from '../../records/agents.js';
import type { ToolCall, ToolSpec } from '../../models/messages.js';
import { definitionOfCall } from '../../tools/guards.js';
import { offeredTools, type ToolContext } from '../../tools/toolbox.js';
import type { ToolDefinition } from '../../tools/definitions.js';

export const REPLAY_MISS = 'replay_miss';

/** How much of a missed call's arguments its error message quotes. */
const QUOTED_ARGUMENTS = 500;

/** What replay made of a call: answered from the record, missed (the run ends), or left to run as any call. */
export type Replayed = { answered: true } | { miss: RunError } | null;

const asksOutside = (definition: ToolDefinition | undefined) =>
  definition?.type === 'http' || definition?.type === 'mcp' || definition?.type === 'a2a';

export function replayMiss(call: Pick<ToolCall, 'name' | 'arguments'>): RunError {
  const args = call.arguments.length > QUOTED_ARGUMENTS ? `${call.arguments.slice(0, QUOTED_ARGUMENTS)}…` : call.arguments;
  return {
    code: REPLAY_MISS,
    message: `The call of ${call.name} with arguments ${args} was not made by the item's source run, so it has no recorded answer to replay; nothing was sent to the tool.`,
  };
}

/**
 * Answers the run's tool call from its item's recorded calls, as its step (marked replayed), before any request
 * could leave. The run's tree (a network run and its hops) is locked meanwhile, so that two calls alike made at
 * once take two recorded answers, in order.
 */
export async function replayToolCall(
  db: Db,
  run: RunRecord,
  agent: AgentDefinition,
  stepIndex: number,
  toolCall: ToolCall,
): Promise<Replayed> {
  if (!run.replay_item_id) return null;
  const item = await replayedItemOf(db, run.replay_item_id);
  const snapshot: ToolCallSnapshot[] = item?.tool_calls ?? [];
  return transaction(db, async (tx) => {
    const root = run.parent_run_id ?? run.id;
    await tx.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [root]);
    const answer = replayAnswer(snapshot, toolCall, await replayedIndexesOf(tx, root));
    if (!answer) {
      if (!asksOutside(definitionOfCall(agent.tools as ToolDefinition[], toolCall.name))) return null;
      const miss = replayMiss(toolCall);
      await beginStep(tx, run.id, stepIndex, { type: 'tool_call', toolCall });
      await failStep(tx, run.id, stepIndex, 'failed', miss);
      return { miss };
    }
    await beginStep(tx, run.id, stepIndex, { type: 'tool_call', toolCall });
    await completeToolStep(tx, run.id, stepIndex, {
      role: 'tool',
      tool_call_id: toolCall.id,
      name: toolCall.name,
      content: answer.content,
      is_error: answer.is_error,
    });
    await tx.query('UPDATE run_steps SET replayed_from = $3 WHERE run_id = $1 AND index = $2', [run.id, stepIndex, answer.index]);
    return { answered: true };
  });
}

/** The recorded calls the run's tree has been answered with so far. */
async function replayedIndexesOf(tx: Queryable, rootRunId: string): Promise<Set<number>> {
  const { rows } = await tx.query<{ replayed_from: number }>(
    `SELECT s.replayed_from FROM run_steps s JOIN runs r ON r.id = s.run_id
      WHERE (r.id = $1 OR r.parent_run_id = $1) AND s.replayed_from IS NOT NULL`,
    [rootRunId],
  );
  return new Set(rows.map((row) => row.replayed_from));
}

/**
 * The tools a replayed run offers: its agent's own, as any run offers them, except that the tools of MCP servers
 * and A2A agents are those the source run was offered (kept with the item), never asked for.
 */
export async function replayedToolSpecs(db: Queryable, run: RunRecord, agent: AgentDefinition, ctx: ToolContext): Promise<ToolSpec[]> {
  const definitions = agent.tools as ToolDefinition[];
  const remote = (def: ToolDefinition | undefined) => def?.type === 'mcp' || def?.type === 'a2a';
  const local = await offeredTools(
    definitions.filter((def) => !remote(def)),
    ctx,
  );
  const recorded = ((await replayedItemOf(db, run.replay_item_id!))?.tool_specs ?? []) as ToolSpec[];
  const seen = new Set(local.map((spec) => spec.name));
  const fromSource: ToolSpec[] = [];
  for (const spec of recorded) {
    if (seen.has(spec.name) || !remote(definitionOfCall(definitions, spec.name))) continue;
    seen.add(spec.name);
    fromSource.push(spec);
  }
  return [...local, ...fromSource];
}
