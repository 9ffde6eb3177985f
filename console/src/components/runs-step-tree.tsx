/**
 * The run's tree and timeline in one table: a row per step and per hop, only the rows in view drawn. The
 * steps still being read hold their rows meanwhile, so that the table has its full length from the start.
 * Each row shows its queue and execution time, tokens, its cost with its share of the run's, and a bar
 * placed on the run's timeline.
 */
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { formatCount, formatDuration, formatUsd } from '../format';
import { IdLink } from './links';
import { ShareBar, StatusBadge, TimelineBar } from './runs-bars';
import type { HopRow, StepRow, TreeRow } from './runs-tree';
import { useVirtualRows } from './runs-virtual-rows';

export const ROW_HEIGHT = 44;
const COLUMNS = ['Step', 'Status', 'Queued', 'Ran', 'Tokens', 'Cost', 'Share of cost', 'Timeline'];

interface Props {
  runId: string;
  rows: TreeRow[];
  /** How many of the run's steps are still being read: rows of the table not drawn yet. */
  unread: number;
  /** The run's total cost in USD, the whole of every share. */
  total: number;
  /** The timeline's span in milliseconds. */
  span: number;
  selected?: string;
  toggleHop: (index: number) => void;
}

function StepName({ row, runId, selected }: { row: StepRow; runId: string; selected: boolean }) {
  const { step } = row;
  const what = step.type === 'model_call' ? `model call · ${step.model ?? ''}` : `tool call · ${step.tool_call?.name ?? ''}`;
  return (
    <Link href={`/runs/${encodeURIComponent(runId)}/steps/${row.key}`} aria-current={selected ? 'true' : undefined} class="step-link">
      Step {step.index} <span class="muted">{what}</span>
    </Link>
  );
}

function HopName({ row, toggle }: { row: HopRow; toggle: () => void }) {
  const { hop } = row;
  return (
    <>
      <button
        type="button"
        class="plain toggle"
        aria-expanded={row.expanded}
        onClick={toggle}
        aria-label={`${row.expanded ? 'Collapse' : 'Expand'} hop ${hop.index}`}
      >
        {row.expanded ? '▾' : '▸'}
      </button>
      <span class="hop-name">
        <span class="hop-line">
          Hop {hop.index}: <IdLink id={hop.child_run_id} /> by <IdLink id={hop.agent_id} />
        </span>
        <span class="hop-line decision" title={hop.decision.reason}>
          {hop.decision.router}: {hop.decision.reason}
        </span>
      </span>
    </>
  );
}

export function StepTree({ runId, rows, unread, total, span, selected, toggleHop }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  const body = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualRows(scroller, rows.length + unread, ROW_HEIGHT);
  const items = virtualizer.getVirtualItems();
  const totalSize = virtualizer.getTotalSize();

  useLayoutEffect(() => {
    if (body.current) body.current.style.height = `${totalSize}px`;
  }, [totalSize]);

  // A deep link to a step opens with that step in view.
  const scrolledTo = useRef<string>();
  useEffect(() => {
    if (!selected || scrolledTo.current === selected) return;
    const index = rows.findIndex((row) => row.key === selected);
    if (index < 0) return;
    scrolledTo.current = selected;
    virtualizer.scrollToIndex(index, { align: 'auto' });
  }, [selected, rows.length]);

  return (
    <div class="step-tree" role="table" aria-label="Steps and hops, with the run's timeline" aria-rowcount={rows.length + unread + 1}>
      <div class="step-row step-head" role="row" aria-rowindex={1}>
        {COLUMNS.map((name) => (
          <span key={name} role="columnheader" class={`col-${name.split(' ')[0]!.toLowerCase()}`}>
            {name}
          </span>
        ))}
      </div>
      <div class="step-scroll" ref={scroller}>
        <div class="step-body" ref={body} role="rowgroup">
          {items.map((item) => {
            const row = rows[item.index];
            const place = (el: HTMLDivElement | null) => {
              if (el) el.style.transform = `translateY(${item.start}px)`;
            };
            if (!row)
              return (
                <div key={`unread-${item.index}`} role="row" aria-rowindex={item.index + 2} aria-busy="true" class="step-row" ref={place}>
                  <span role="cell" class="col-step muted">
                    Reading…
                  </span>
                </div>
              );
            const share = total > 0 ? row.cost / total : 0;
            const duration = row.endMs === null ? null : row.endMs - row.startMs;
            return (
              <div
                key={row.key}
                role="row"
                aria-rowindex={item.index + 2}
                class={`step-row depth-${row.depth}${row.key === selected ? ' selected' : ''}${row.kind === 'hop' ? ' hop-row' : ''}`}
                ref={place}
              >
                <span role="cell" class="col-step">
                  {row.kind === 'hop' ? (
                    <HopName row={row} toggle={() => toggleHop(row.hop.index)} />
                  ) : (
                    <StepName row={row} runId={runId} selected={row.key === selected} />
                  )}
                </span>
                <span role="cell" class="col-status">
                  <StatusBadge status={row.status} />
                </span>
                <span role="cell" class="col-queued number">
                  {row.kind === 'step' ? formatDuration(row.queuedMs) : ''}
                </span>
                <span role="cell" class="col-ran number">
                  {duration === null ? 'running' : formatDuration(duration)}
                </span>
                <span role="cell" class="col-tokens number">
                  {row.tokens === null ? '' : formatCount(row.tokens)}
                </span>
                <span role="cell" class="col-cost number">
                  {row.costText === null ? '' : formatUsd(row.costText)}
                </span>
                <span role="cell" class="col-share">
                  {row.costText === null ? '' : <ShareBar share={share} />}
                </span>
                <span role="cell" class="col-timeline">
                  <TimelineBar
                    start={row.startMs / span}
                    end={(row.endMs ?? span) / span}
                    active={row.endMs === null}
                    label={`from ${formatDuration(row.startMs)} to ${row.endMs === null ? 'now' : formatDuration(row.endMs)}`}
                  />
                </span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
