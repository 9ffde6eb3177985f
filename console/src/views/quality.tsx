/**
 * Quality: each scorer's mean per bucket over a range, drawn as lines, and its scores in ten bins with their
 * counts; optionally per agent, network, model, key or tag. Range and grouping live in the URL. A form adds
 * a person's feedback to a run, which counts as the `human` scorer.
 */
import { useMemo, useEffect, useRef } from 'preact/hooks';
import { api, unwrap } from '../api';
import { Async, EmptyState } from '../components/states';
import { IdLink } from '../components/links';
import { formatCount } from '../format';
import { useApi } from '../use-api';
import { allBuckets } from '../components/analytics-pages';
import { RangePicker, useReportRange, type ReportRange } from '../components/analytics-range';
import { dimensionName, dimensionOf, GroupPicker, type Dimension } from '../components/analytics-group';
import { BINS, qualitySeries, type ScorerSeries } from '../components/analytics-quality-report';
import { TimeSeries } from '../components/analytics-time-series';
import { FeedbackForm } from '../components/analytics-feedback';
import { useNames } from '../components/analytics-names';
import './analytics.css';

const MAX_BUCKETS_A_PAGE = 180;

export default function QualityView() {
  const [range, params, change] = useReportRange(30);
  const dimension = dimensionOf(params.get('group'), null);
  const loaded = useApi(
    async (signal) => {
      const buckets = await allBuckets(
        async (page, limit) =>
          unwrap(
            await api.GET('/v1/analytics/quality', {
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
      return { ...qualitySeries(buckets, dimension), range, dimension };
    },
    [range.startTime, range.endTime, range.width, dimension],
  );

  return (
    <>
      <h1>Quality</h1>
      <RangePicker range={range} change={change} />
      <GroupPicker allowNone dimension={dimension} change={(group) => change({ group: group === 'none' ? null : group })} />
      <p class="muted" role="status" aria-live="polite">
        {loaded.loading
          ? 'Loading scores…'
          : loaded.data
            ? `${loaded.data.series.length} scorer series from ${range.from} to ${range.to}.`
            : ''}
      </p>
      <Async loaded={loaded} what="scores">
        {({ times, series, range: shown, dimension: grouped }) =>
          series.length === 0 ? (
            <EmptyState
              title="No scored runs in this range"
              path={`/v1/analytics/quality?start_time=${shown.startTime}&end_time=${shown.endTime}&bucket_width=${shown.width}`}
            >
              <p>
                Every run is scored when it ends (completion, latency, tool errors, a non-empty answer, groundedness); runs that ended in
                this range appear here.
              </p>
            </EmptyState>
          ) : (
            <QualityReport times={times} series={series} range={shown} dimension={grouped} />
          )
        }
      </Async>
      <FeedbackForm onSent={loaded.reload} />
    </>
  );
}

const seriesLabel = (s: ScorerSeries, dimension: Dimension | null, names: Map<string, string>) =>
  dimension ? `${s.scorer} · ${(s.group !== null && names.get(s.group)) || (s.group ?? '(none)')}` : s.scorer;

function QualityReport({
  times,
  series,
  range,
  dimension,
}: {
  times: number[];
  series: ScorerSeries[];
  range: ReportRange;
  dimension: Dimension | null;
}) {
  const names = useNames(dimension);
  const lines = useMemo(() => series.map((s) => ({ label: seriesLabel(s, dimension, names), values: s.means })), [series, names]);
  const summary =
    `Lines of the mean score per ${range.width === '1d' ? 'day' : 'hour'}, ${range.from} to ${range.to}` +
    `${dimension ? `, by ${dimensionName(dimension)}` : ''}: ` +
    series.map((s) => `${seriesLabel(s, dimension, names)} ${s.mean.toFixed(2)} over ${s.count} scores`).join('; ') +
    '. The table below lists the counts.';
  const grouped = dimension !== null;
  const linked = grouped && !dimension.startsWith('metadata.') && dimension !== 'model';
  return (
    <>
      <TimeSeries
        times={times}
        step={range.width === '1d' ? 86_400 : 3600}
        lines={lines}
        summary={summary}
        range={[0, 1]}
        format={(v) => v.toFixed(1)}
      />
      <div class="table-scroll" role="region" aria-label="Scores per scorer" tabindex={0}>
        <table class="quality-scores">
          <caption>
            Scores per scorer{grouped ? ` and ${dimensionName(dimension)}` : ''}: how many, their mean and how many fell in each tenth
          </caption>
          <thead>
            <tr>
              <th scope="col">Scorer</th>
              {grouped && <th scope="col">{dimensionName(dimension)}</th>}
              <th scope="col" class="number">
                Scores
              </th>
              <th scope="col" class="number">
                Mean
              </th>
              {BINS.map((bin) => (
                <th key={bin} scope="col" class="number">
                  {bin}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {series.map((s) => (
              <tr key={`${s.scorer} ${String(s.group)}`}>
                <th scope="row">{s.scorer}</th>
                {grouped && (
                  <td>
                    {s.group !== null && names.has(s.group) && <span class="group-name">{names.get(s.group)} </span>}
                    {linked && s.group ? <IdLink id={s.group} /> : (s.group ?? '(none)')}
                  </td>
                )}
                <td class="number">{formatCount(s.count)}</td>
                <td class="number">{s.mean.toFixed(3)}</td>
                {s.distribution.map((n, bin) => (
                  <td key={bin} class="number bin">
                    <Bar share={s.count ? n / s.count : 0} />
                    {formatCount(n)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** A cell's share drawn as a bar under its number (the width is set through the DOM: no inline styles). */
function Bar({ share }: { share: number }) {
  const bar = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    bar.current!.style.width = `${Math.round(share * 100)}%`;
  }, [share]);
  return <span ref={bar} class="bin-bar" aria-hidden="true" />;
}
