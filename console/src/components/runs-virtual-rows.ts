/**
 * Virtualised rows of a fixed height with @tanstack/virtual-core: only the rows in view (and a few beyond)
 * are drawn, so a run of thousands of steps costs what a screenful does.
 */
import { useLayoutEffect, useReducer, useState } from 'preact/hooks';
import type { RefObject } from 'preact';
import { elementScroll, observeElementOffset, observeElementRect, Virtualizer, type VirtualizerOptions } from '@tanstack/virtual-core';

export function useVirtualRows<T extends HTMLElement>(scroller: RefObject<T>, count: number, rowHeight: number): Virtualizer<T, Element> {
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const options: VirtualizerOptions<T, Element> = {
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => rowHeight,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    overscan: 10,
    onChange: () => redraw(undefined),
  };
  const [virtualizer] = useState(() => new Virtualizer<T, Element>(options));
  virtualizer.setOptions(options);
  useLayoutEffect(() => virtualizer._didMount(), [virtualizer]);
  useLayoutEffect(() => virtualizer._willUpdate());
  return virtualizer;
}
