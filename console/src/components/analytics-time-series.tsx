/**
 * Lines over time drawn by uPlot, loaded only by the views that draw them. Each line has its own dash as
 * well as its colour; the container says in words what the lines show, and the views list the numbers.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Line {
  label: string;
  /** One value per time, null where there is none. */
  values: (number | null)[];
}

const COLOURS = ['#3b7dd8', '#d2553f', '#2e9a57', '#9461c9', '#c98a12', '#1c9bb0', '#b5477f', '#7a7f2a'];
const DASHES: number[][] = [[], [8, 4], [2, 3], [10, 3, 2, 3], [4, 4], [14, 4], [1, 4], [6, 2, 2, 2]];
const cssVariable = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

export function TimeSeries({
  times,
  step,
  lines,
  summary,
  range,
  format = (v) => String(v),
}: {
  /** Unix seconds. */
  times: number[];
  /** Seconds between times: the time axis ticks at multiples of it. */
  step: number;
  lines: Line[];
  summary: string;
  /** The value axis' fixed range, e.g. [0, 1] for scores. */
  range?: [number, number];
  format?: (value: number) => string;
}) {
  const container = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = container.current!;
    let plot: uPlot | undefined;
    const draw = () => {
      plot?.destroy();
      const fg = cssVariable('--fg');
      const border = cssVariable('--border');
      const axis = { stroke: fg, grid: { stroke: border, width: 1 }, ticks: { stroke: border, width: 1 } };
      plot = new uPlot(
        {
          width: Math.max(240, element.clientWidth),
          height: 280,
          scales: { x: { time: true }, y: range ? { range: () => range } : { auto: true } },
          axes: [
            { ...axis, incrs: [1, 2, 3, 6, 12, 24, 48, 168, 336, 720].map((n) => n * step) },
            { ...axis, values: (_self, ticks) => ticks.map(format) },
          ],
          legend: { live: false },
          series: [
            {},
            ...lines.map((line, i) => ({
              label: line.label,
              stroke: COLOURS[i % COLOURS.length],
              dash: DASHES[Math.floor(i / COLOURS.length + i) % DASHES.length],
              width: 2,
              spanGaps: true,
              points: { show: true, size: 5 },
            })),
          ],
        },
        [times, ...lines.map((line) => line.values)] as uPlot.AlignedData,
        element,
      );
    };
    draw();
    const resize = new ResizeObserver(() => plot?.setSize({ width: Math.max(240, element.clientWidth), height: 280 }));
    resize.observe(element);
    const theme = new MutationObserver(draw);
    theme.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => {
      resize.disconnect();
      theme.disconnect();
      plot?.destroy();
    };
  }, [times, step, lines]);

  return <div ref={container} class="time-series" role="img" aria-label={summary} />;
}
