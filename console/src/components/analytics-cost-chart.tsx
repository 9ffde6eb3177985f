/**
 * The costs as stacked bars, one stack per bucket and one colour per group, drawn by ECharts on a canvas.
 * Only what it draws is imported (echarts/core and its parts), and only by the Costs view, which loads
 * on first use. The table beside it is the chart's accessible alternative; the container says in words what
 * the chart shows.
 */
import { useEffect, useRef } from 'preact/hooks';
import { init, use, type ComposeOption, type ECharts } from 'echarts/core';
import { BarChart, type BarSeriesOption } from 'echarts/charts';
import {
  GridComponent,
  LegendComponent,
  TooltipComponent,
  type GridComponentOption,
  type LegendComponentOption,
  type TooltipComponentOption,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
import { groupLabel, type CostTable } from './analytics-cost-report';

use([BarChart, GridComponent, LegendComponent, TooltipComponent, CanvasRenderer]);

type Option = ComposeOption<BarSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption>;

/** Set when the chart has first drawn, for the benchmark that times the Costs page. */
export const COSTS_RENDERED_MARK = 'agentplane:costs-rendered';

const cssVariable = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

function optionOf(table: CostTable, labels: string[], names: Map<string, string>): Option {
  const fg = cssVariable('--fg');
  const muted = cssVariable('--muted');
  const border = cssVariable('--border');
  const raised = cssVariable('--bg-raised');
  return {
    animation: false,
    // Inside the canvas: the HTML tooltip would write style attributes, which the console's CSP refuses.
    tooltip: {
      trigger: 'axis',
      renderMode: 'richText',
      backgroundColor: raised,
      borderColor: border,
      textStyle: { color: fg },
      axisPointer: { type: 'shadow', shadowStyle: { color: border, opacity: 0.4 } },
      valueFormatter: (value) => `$${String(value)}`,
    },
    legend: { type: 'scroll', bottom: 0, textStyle: { color: fg }, pageTextStyle: { color: fg } },
    grid: { left: 8, right: 16, top: 16, bottom: 48, containLabel: true },
    xAxis: { type: 'category', data: labels, axisLabel: { color: muted }, axisLine: { lineStyle: { color: border } } },
    yAxis: {
      type: 'value',
      axisLabel: { color: muted, formatter: (value: number) => `$${value}` },
      splitLine: { lineStyle: { color: border } },
    },
    series: table.groups.map((group, g) => ({
      type: 'bar',
      stack: 'cost',
      name: (group.value !== null && names.get(group.value)) || groupLabel(group.value),
      // Drawing needs numbers; the exact strings are in the table and the CSV.
      data: table.buckets.map((row) => (row.amounts[g] === null ? 0 : Number(row.amounts[g]))),
      emphasis: { focus: 'series' },
      large: table.buckets.length > 60,
    })),
  };
}

export function CostChart({
  table,
  labels,
  names,
  summary,
}: {
  table: CostTable;
  labels: string[];
  names: Map<string, string>;
  summary: string;
}) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<ECharts>();

  useEffect(() => {
    const instance = init(container.current!, null, { renderer: 'canvas' });
    chart.current = instance;
    let marked = false;
    instance.on('finished', () => {
      if (marked) return;
      marked = true;
      performance.mark(COSTS_RENDERED_MARK);
    });
    const resize = new ResizeObserver(() => instance.resize());
    resize.observe(container.current!);
    return () => {
      resize.disconnect();
      instance.dispose();
    };
  }, []);

  useEffect(() => {
    const draw = () => chart.current?.setOption(optionOf(table, labels, names), { notMerge: true });
    draw();
    // The axis and legend take the theme's colours, again when the theme changes.
    const theme = new MutationObserver(draw);
    theme.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => theme.disconnect();
  }, [table, labels, names]);

  return <div ref={container} class="cost-chart" role="img" aria-label={summary} />;
}
