/**
 * Steps 1…n−1 of a run that ended after its first model call, written through the database as the worker
 * writes them (a scripted loop of thousands of model and tool calls would take minutes of workflow activities
 * for the same rows): model calls and tool calls in turn, 5 ms apart, each model call costing $0.00001, with
 * the run's totals raised to match.
 */
import type { Queryable } from '../../records/db.js';

export async function addSteps(db: Queryable, runId: string, steps: number): Promise<void> {
  await db.query(
    `INSERT INTO run_steps (run_id, index, type, status, model, provider, price_version, input_tokens, output_tokens, cost, tool_call, message, started_at, completed_at)
     SELECT $1, i, CASE WHEN i % 2 = 0 THEN 'model_call' ELSE 'tool_call' END, 'completed',
       CASE WHEN i % 2 = 0 THEN 'gpt-4.1-mini' END, CASE WHEN i % 2 = 0 THEN 'openai' END, CASE WHEN i % 2 = 0 THEN '2025-04-14' END,
       CASE WHEN i % 2 = 0 THEN 10 ELSE 0 END, CASE WHEN i % 2 = 0 THEN 2 ELSE 0 END, CASE WHEN i % 2 = 0 THEN 0.00001 ELSE 0 END,
       CASE WHEN i % 2 = 1 THEN jsonb_build_object('id', 'call_' || i, 'name', 'lookup', 'arguments', '{"n":' || i || '}') END,
       CASE WHEN i % 2 = 1 THEN jsonb_build_object('role', 'tool', 'content', 'result ' || i, 'tool_call_id', 'call_' || i, 'name', 'lookup')
            ELSE jsonb_build_object('role', 'assistant', 'content', 'thought ' || i) END,
       r.started_at + make_interval(secs => i * 0.005), r.started_at + make_interval(secs => i * 0.005 + 0.004)
     FROM runs r, generate_series(1, $2 - 1) AS i WHERE r.id = $1`,
    [runId, steps],
  );
  await db.query(
    `UPDATE runs SET cost = runs.cost + s.added, input_tokens = runs.input_tokens + s.input, output_tokens = runs.output_tokens + s.output
     FROM (SELECT sum(cost) AS added, sum(input_tokens) AS input, sum(output_tokens) AS output FROM run_steps WHERE run_id = $1 AND index > 0) s WHERE runs.id = $1`,
    [runId],
  );
}

/**
 * `copies` copies of a finished run in its project, written through the database, each with one tool call
 * whose result is `outputBytes` long: a page of runs as large as the tools' limits allow.
 */
export async function addBulkyCopies(db: Queryable, runId: string, copies: number, outputBytes: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO runs (id, project_id, agent_id, agent_version, api_key_id, status, model, input, file_ids, max_steps, metadata, created_at, started_at, completed_at)
     SELECT 'run_' || md5(random()::text || i), project_id, agent_id, agent_version, api_key_id, 'completed', model, input, file_ids, max_steps, metadata,
       created_at, started_at, completed_at
     FROM runs, generate_series(1, $2) AS i WHERE id = $1
     RETURNING id`,
    [runId, copies],
  );
  const ids = rows.map((r) => r.id);
  await db.query(
    `INSERT INTO run_steps (run_id, index, type, status, tool_call, message, started_at, completed_at)
     SELECT id, 0, 'tool_call', 'completed', jsonb_build_object('id', 'call_0', 'name', 'big', 'arguments', '{}'),
       jsonb_build_object('role', 'tool', 'content', repeat('a', $2), 'tool_call_id', 'call_0', 'name', 'big'), now(), now()
     FROM unnest($1::text[]) AS id`,
    [ids, outputBytes],
  );
  return ids;
}

/** Makes each tool call's result of a run `bytes` long, as large as a tool's limit allows. */
export async function fattenToolResults(db: Queryable, runId: string, bytes: number): Promise<void> {
  await db.query(
    `UPDATE run_steps SET message = jsonb_set(message, '{content}', to_jsonb(repeat('a', $2))) WHERE run_id = $1 AND type = 'tool_call'`,
    [runId, bytes],
  );
}
