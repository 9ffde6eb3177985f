/**
 * Costs: the usage ledger's spend per bucket, stacked by agent, network, model, API key or a metadata tag,
 * over a range; the same exact amounts as tables and as a CSV download. Range and grouping live in the URL.
 */
import { useMemo } from 'preact/hooks';
import { api, apiUrl, unwrap } from '../api';
import { Async, EmptyState } from '../components/states';
import { IdLink } from '../components/links';
import { formatCount, formatUsd } from '../format';
import { useApi } from '../use-api';
import { allBuckets } from '../components/analytics-pages';
import { bucketLabel, RangePicker, useReportRange, type ReportRange } from '../components/analytics-range';
import { dimensionName, dimensionOf, GroupPicker, type Dimension } from '../components/analytics-group';
import { costCsv, costTable, groupLabel, spendingRows, type CostTable } from '../components/analytics-cost-report';
import { CostChart } from '../components/analytics-cost-chart';
import { useNames } from '../components/analytics-names';
import './analytics.css';

const MAX_BUCKETS_A_PAGE = 180;

export default function CostsView() {
  const [range, params, change] = useReportRange(30);
  const dimension = dimensionOf(params.get('group'), 'agent_id');
  const loaded = useApi(
    async (signal) => {
      const buckets = await allBuckets(
        async (page, limit) =>
          unwrap(
            await api.GET('/v1/analytics/costs', {
              params: {
                query: {
                  start_time: range.startTime,
                  end_time: range.endTime,
                  bucket_width: range.width,
                  group_by: dimension ? [dimension] : undefined,
                  limit,
                  page,
                },
              },
              signal,
            }),
          ),
        MAX_BUCKETS_A_PAGE,
      );
      return { table: costTable(buckets, dimension), range, dimension };
    },
    [range.startTime, range.endTime, range.width, dimension],
  );

  return (
    <>
      <h1>Costs</h1>
      <RangePicker range={range} change={change} />
      <GroupPicker dimension={dimension} change={(group) => change({ group: group === 'agent_id' ? null : group })} />
      <p class="muted" role="status" aria-live="polite">
        {loaded.loading
          ? 'Loading costs…'
          : loaded.data
            ? `${formatUsd(loaded.data.table.total)} from ${range.from} to ${range.to}, by ${dimensionName(dimension)}.`
            : ''}
      </p>
      <Async loaded={loaded} what="costs">
        {({ table, range: shown, dimension: grouped }) =>
          table.groups.length === 0 ? (
            <EmptyState title="No spend in this range" path={reportPath(shown, grouped)}>
              <p>Model calls of runs, extraction and quality judges are charged to the usage ledger; their costs appear here.</p>
            </EmptyState>
          ) : (
            <CostReport table={table} range={shown} dimension={grouped} />
          )
        }
      </Async>
    </>
  );
}

const reportPath = (range: ReportRange, dimension: Dimension | null) =>
  `/v1/analytics/costs?start_time=${range.startTime}&end_time=${range.endTime}&bucket_width=${range.width}${dimension ? `&group_by=${dimension}` : ''}`;

function CostReport({ table, range, dimension }: { table: CostTable; range: ReportRange; dimension: Dimension | null }) {
  const labels = useMemo(() => table.buckets.map((row) => bucketLabel(row.start, range.width)), [table]);
  const name = dimensionName(dimension);
  const names = useNames(dimension);
  const nameOf = (value: string | null) => (value !== null && names.get(value)) || groupLabel(value);
  const biggest = table.groups.slice(0, 3).map((g) => `${nameOf(g.value)} ${formatUsd(g.total)}`);
  const summary =
    `Stacked bars of cost per ${range.width === '1d' ? 'day' : 'hour'} by ${name}, ${range.from} to ${range.to}: ` +
    `${formatUsd(table.total)} in all across ${table.groups.length} ${table.groups.length === 1 ? 'group' : 'groups'}; most: ${biggest.join(', ')}. ` +
    'The tables below list every amount.';
  const download = () => {
    const blob = new Blob([costCsv(table, (start) => bucketLabel(start, range.width))], { type: 'text/csv;charset=utf-8' });
    const link = document.createElement('a');
    link.href = URL.createObjectURL(blob);
    link.download = `costs-${range.from}-${range.to}-${range.width}-by-${dimension ?? 'none'}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  };
  const rows = spendingRows(table);
  const header = (value: string | null) =>
    dimension && !dimension.startsWith('metadata.') && dimension !== 'model' && value ? <IdLink id={value} /> : <>{groupLabel(value)}</>;

  return (
    <>
      <CostChart table={table} labels={labels} names={names} summary={summary} />
      <div class="row">
        <button type="button" onClick={download}>
          Download CSV
        </button>
        <a class="button plain" href={apiUrl(reportPath(range, dimension))} target="_blank" rel="noreferrer">
          The report as JSON
        </a>
      </div>
      <table class="cost-totals">
        <caption>Totals by {name}</caption>
        <thead>
          <tr>
            <th scope="col">{name[0]!.toUpperCase() + name.slice(1)}</th>
            <th scope="col" class="number">
              Cost (USD)
            </th>
            <th scope="col" class="number">
              Model requests
            </th>
            <th scope="col" class="number">
              Input tokens
            </th>
            <th scope="col" class="number">
              Output tokens
            </th>
          </tr>
        </thead>
        <tbody>
          {table.groups.map((group) => (
            <tr key={String(group.value)}>
              <th scope="row">
                {group.value !== null && names.has(group.value) && <span class="group-name">{names.get(group.value)} </span>}
                {header(group.value)}
              </th>
              <td class="number">{group.total}</td>
              <td class="number">{formatCount(group.requests)}</td>
              <td class="number">{formatCount(group.inputTokens)}</td>
              <td class="number">{formatCount(group.outputTokens)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">Total</th>
            <td class="number">{table.total}</td>
            <td class="number">{formatCount(table.groups.reduce((n, g) => n + g.requests, 0))}</td>
            <td class="number">{formatCount(table.groups.reduce((n, g) => n + g.inputTokens, 0))}</td>
            <td class="number">{formatCount(table.groups.reduce((n, g) => n + g.outputTokens, 0))}</td>
          </tr>
        </tfoot>
      </table>
      <div class="table-scroll" role="region" aria-label={`Cost per ${range.width === '1d' ? 'day' : 'hour'}`} tabindex={0}>
        <table class="cost-buckets">
          <caption>
            Cost per {range.width === '1d' ? 'day' : 'hour'} by {name} in USD ({rows.length} of {table.buckets.length} buckets had spend;
            the others are left out)
          </caption>
          <thead>
            <tr>
              <th scope="col">Bucket</th>
              {table.groups.map((group) => (
                <th key={String(group.value)} scope="col" class="number">
                  {header(group.value)}
                </th>
              ))}
              <th scope="col" class="number">
                Total
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.start}>
                <th scope="row">{bucketLabel(row.start, range.width)}</th>
                {row.amounts.map((amount, g) => (
                  <td key={g} class="number">
                    {amount ?? ''}
                  </td>
                ))}
                <td class="number">{row.total}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">Total</th>
              {table.groups.map((group) => (
                <td key={String(group.value)} class="number">
                  {group.total}
                </td>
              ))}
              <td class="number">{table.total}</td>
            </tr>
          </tfoot>
        </table>
      </div>
    </>
  );
}
