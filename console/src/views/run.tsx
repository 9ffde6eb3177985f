/**
 * A run: its status, totals and model routing; the tree and timeline of its steps (and a network run's
 * hops, each opening onto its child run); one step in full, named in the URL; the output live while it runs;
 * and cancel.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, unwrap } from '../api';
import { useApi } from '../use-api';
import { Async } from '../components/states';
import { IdLink } from '../components/links';
import { formatCount, formatDuration, formatTime, formatUsd } from '../format';
import { StatusBadge } from '../components/runs-bars';
import { hopOfKey, modelOf, rowsOf, runDurationMs, spanOf, type Run, type StepRow } from '../components/runs-tree';
import { StepTree } from '../components/runs-step-tree';
import { StepDetail } from '../components/runs-step-detail';
import { useRunEvents } from '../components/runs-live';
import './runs.css';

const isActive = (status: string) => status === 'queued' || status === 'in_progress' || status === 'requires_action';

/** How often at most a run still being read is drawn again with the steps read since. */
const DRAW_EVERY_MS = 250;

/**
 * A run with all its steps: the run carries the first of them, and the rest are read a page at a time.
 * `onPage`, when given, is told the run as read so far: at once, then at most every `DRAW_EVERY_MS`.
 */
async function readRun(id: string, signal?: AbortSignal, onPage?: (partial: Run) => void): Promise<Run> {
  const run = unwrap(await api.GET('/v1/runs/{id}', { params: { path: { id } }, signal }));
  const steps = [...run.steps];
  let toldAt = -Infinity;
  for (let more = run.steps_has_more; more && steps.length > 0;) {
    if (onPage && performance.now() - toldAt >= DRAW_EVERY_MS) {
      onPage({ ...run, steps: [...steps], steps_has_more: true });
      toldAt = performance.now();
    }
    const after = steps[steps.length - 1]!.index;
    const page = unwrap(await api.GET('/v1/runs/{id}/steps', { params: { path: { id }, query: { after, limit: 100 } }, signal }));
    steps.push(...page.data);
    more = page.has_more && page.data.length > 0;
  }
  return { ...run, steps, steps_has_more: false };
}

export default function RunView({ params }: { params: { id: string; step?: string } }) {
  // The first time, the run is drawn once its first steps are read and grows a page at a time, so that a
  // long run shows its start after one request; a reload (the run changed) keeps what is drawn until the
  // whole run is read again.
  const drawn = useRef<string>();
  const loaded = useApi<Run>(
    (signal, show) => {
      const first = drawn.current !== params.id;
      drawn.current = params.id;
      return readRun(params.id, signal, first ? show : undefined);
    },
    [params.id],
  );
  return (
    <>
      <h1>
        Run <code>{params.id}</code>
      </h1>
      <Async loaded={loaded} what="the run">
        {(run) => <RunDetail key={run.id} run={run} selected={params.step} reload={loaded.reload} />}
      </Async>
    </>
  );
}

function RunDetail({ run, selected, reload }: { run: Run; selected?: string; reload: () => void }) {
  const active = isActive(run.status);
  const live = useRunEvents(run.id, active, reload);
  const [expanded, setExpanded] = useState<ReadonlySet<number>>(
    () => new Set(hopOfKey(selected) === undefined ? [] : [hopOfKey(selected)!]),
  );
  const [children, setChildren] = useState<ReadonlyMap<string, Run>>(new Map());
  const [cancelling, setCancelling] = useState(false);
  const [notice, setNotice] = useState<string>();

  // A step of a hop named in the URL opens its hop.
  const linkedHop = hopOfKey(selected);
  useEffect(() => {
    if (linkedHop !== undefined && !expanded.has(linkedHop)) setExpanded(new Set([...expanded, linkedHop]));
  }, [linkedHop]);

  // The child runs of the open hops, read again as the run changes (a hop in progress gains steps).
  useEffect(() => {
    const controller = new AbortController();
    const open = run.hops.filter((hop) => expanded.has(hop.index));
    for (const hop of open) {
      const known = children.get(hop.child_run_id);
      if (known && !isActive(known.status) && known.status === hop.status) continue;
      readRun(hop.child_run_id, controller.signal)
        .then((child) => setChildren((previous) => new Map(previous).set(child.id, child)))
        .catch((error: Error) => controller.signal.aborted || setNotice(`Hop ${hop.index} could not be read: ${error.message}`));
    }
    return () => controller.abort();
  }, [run, expanded]);

  const rows = useMemo(() => rowsOf(run, expanded, children), [run, expanded, children]);
  const span = spanOf(run, rows, Date.now());
  // A hop's cost joins its network run's when the hop ends: until then the whole is the sum of the parts.
  const total = Math.max(
    Number(run.cost),
    rows.reduce((sum, row) => (row.depth === 0 ? sum + row.cost : sum), 0),
  );
  const selectedRow = rows.find((row): row is StepRow => row.kind === 'step' && row.key === selected);
  const selectedRun = selectedRow ? (selectedRow.runId === run.id ? run : children.get(selectedRow.runId)) : undefined;

  // For measuring: the first time the run is drawn, and the first time with all its steps read (a run once
  // read in full is not drawn in parts again).
  useEffect(() => {
    requestAnimationFrame(() => performance.mark('agentplane:run-first-rows'));
  }, []);
  useEffect(() => {
    if (!run.steps_has_more) requestAnimationFrame(() => performance.mark('agentplane:run-rendered'));
  }, [run.steps_has_more]);

  const toggleHop = (index: number) => {
    const next = new Set(expanded);
    if (!next.delete(index)) next.add(index);
    setExpanded(next);
  };

  async function cancel() {
    setCancelling(true);
    setNotice(undefined);
    try {
      const ended = unwrap(await api.POST('/v1/runs/{id}/cancel', { params: { path: { id: run.id } } }));
      setNotice(ended.status === 'cancelled' ? 'The run was cancelled.' : `The run is ${ended.status.replace('_', ' ')}.`);
      reload();
    } catch (error) {
      setNotice(`Cancelling failed: ${(error as Error).message}`);
    } finally {
      setCancelling(false);
    }
  }

  const duration = runDurationMs(run);
  const model = modelOf(run);
  return (
    <>
      <div class="run-head" aria-live="polite">
        <StatusBadge status={run.status} />
        {run.network_id ? (
          <span>
            Network <IdLink id={run.network_id} /> (version {run.network_version})
          </span>
        ) : (
          <span>
            Agent <IdLink id={run.agent_id} /> (version {run.agent_version})
          </span>
        )}
        {run.parent_run_id && (
          <span>
            Hop of <IdLink id={run.parent_run_id} />
          </span>
        )}
        {active && (
          <button type="button" class="danger" onClick={() => void cancel()} disabled={cancelling}>
            {cancelling ? 'Cancelling…' : 'Cancel run'}
          </button>
        )}
      </div>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {run.error && (
        <p class="error" role="alert">
          {run.error.code}: {run.error.message}
        </p>
      )}
      <dl class="facts">
        <dt>Model</dt>
        <dd>
          {model ?? <span class="muted">none of its own (its hops' models are theirs)</span>}
          {run.resolved_model && run.resolved_model !== run.model && run.model !== 'none' && (
            <span class="muted"> (asked for {run.model})</span>
          )}
        </dd>
        {run.routing_reason && (
          <>
            <dt>Routing</dt>
            <dd>{run.routing_reason}</dd>
          </>
        )}
        <dt>Tokens</dt>
        <dd>
          {formatCount(run.usage.input_tokens)} in ({formatCount(run.usage.cached_tokens)} cached), {formatCount(run.usage.output_tokens)}{' '}
          out
        </dd>
        <dt>Cost</dt>
        <dd>{formatUsd(run.cost)}</dd>
        <dt>Created</dt>
        <dd>{formatTime(run.created_at)}</dd>
        <dt>Queued</dt>
        <dd>{run.started_at === null ? 'not started' : formatDuration((run.started_at - run.created_at) * 1000)}</dd>
        <dt>Duration</dt>
        <dd>{duration === null ? '—' : `${formatDuration(duration)}${active ? ' so far' : ''}`}</dd>
        {run.thread_id && (
          <>
            <dt>Thread</dt>
            <dd>
              <IdLink id={run.thread_id} />
            </dd>
          </>
        )}
        {run.subject_id && (
          <>
            <dt>Subject</dt>
            <dd>
              <Link href={`/memories?subject_id=${encodeURIComponent(run.subject_id)}`}>{run.subject_id}</Link>
            </dd>
          </>
        )}
        {run.previous_run_id && (
          <>
            <dt>Continues</dt>
            <dd>
              <IdLink id={run.previous_run_id} />
            </dd>
          </>
        )}
      </dl>

      <h2>Output</h2>
      <pre class="run-output" aria-live="polite" aria-busy={active}>
        {active ? live.text || (live.following ? 'Waiting for the model…' : 'Connecting…') : run.output.text || '(no text)'}
      </pre>

      <h2>
        {run.hops.length > 0 ? 'Steps and hops' : 'Steps'}{' '}
        <span class="muted">
          ({formatCount(Math.max(run.step_count, run.steps.length))} steps{run.hops.length > 0 ? `, ${run.hops.length} hops` : ''})
        </span>
      </h2>
      {rows.length === 0 ? (
        <p class="muted">No steps yet.</p>
      ) : (
        <StepTree
          runId={run.id}
          rows={rows}
          unread={run.steps_has_more ? Math.max(0, run.step_count - run.steps.length) : 0}
          total={total}
          span={span}
          selected={selected}
          toggleHop={toggleHop}
        />
      )}
      {selected &&
        !selectedRow &&
        rows.length > 0 &&
        !run.steps_has_more &&
        (linkedHop === undefined || children.has(run.hops[linkedHop]?.child_run_id ?? '')) && (
          <p class="notice" role="status">
            This run has no step {selected}.
          </p>
        )}
      {selectedRow && selectedRun && <StepDetail row={selectedRow} run={selectedRun} />}
    </>
  );
}
