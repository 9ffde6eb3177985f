/**
 * The drawn lines of a page, from its operator list: stroked path segments and filled rectangles at most 3 pt
 * thick (Chrome and Word draw table borders as thin filled rectangles), in page points from the top-left.
 */
import { OPS } from './pdfjs.js';
import type { PageViewport, PDFPageProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';

/** A horizontal ruling runs from `start` to `end` along x at `position` = y; a vertical one along y at x. */
export interface Ruling {
  position: number;
  start: number;
  end: number;
}

export interface PageDrawing {
  horizontal: Ruling[];
  vertical: Ruling[];
  /** Whether any image is painted: a page without text but with an image is a scan. */
  paintsImage: boolean;
}

type Matrix = [number, number, number, number, number, number];

/** A filled rectangle thinner than this is a rule, not a shaded cell. */
const maxRuleThickness = 3;
/** How far from axis-aligned a segment may be, in points over its length, and still count. */
const skewTolerance = 1;

// pdfjs ≥ 4.10 records each path as one constructPath op: [paintOp, [Float32Array of DrawOPS], minMax].
const drawOps = { moveTo: 0, lineTo: 1, curveTo: 2, quadraticCurveTo: 3, closePath: 4 };
const strokeOps = new Set<number>([
  OPS.stroke,
  OPS.closeStroke,
  OPS.fillStroke,
  OPS.eoFillStroke,
  OPS.closeFillStroke,
  OPS.closeEOFillStroke,
]);
const fillOps = new Set<number>([OPS.fill, OPS.eoFill, OPS.fillStroke, OPS.eoFillStroke, OPS.closeFillStroke, OPS.closeEOFillStroke]);
const imageOps = new Set<number>([
  OPS.paintImageXObject,
  OPS.paintInlineImageXObject,
  OPS.paintInlineImageXObjectGroup,
  OPS.paintImageXObjectRepeat,
  OPS.paintImageMaskXObject,
  OPS.paintImageMaskXObjectGroup,
  OPS.paintImageMaskXObjectRepeat,
]);

export async function drawingOf(page: PDFPageProxy, viewport: PageViewport): Promise<PageDrawing> {
  // Annotations (form fields, links) are not the page's content.
  const { fnArray, argsArray } = await page.getOperatorList({ annotationMode: 0 });
  const drawing: PageDrawing = { horizontal: [], vertical: [], paintsImage: false };
  const stack: Matrix[] = [];
  let ctm = viewport.transform as Matrix;
  for (let i = 0; i < fnArray.length; i++) {
    const fn = fnArray[i]!;
    const args = argsArray[i] as unknown[];
    if (fn === OPS.save) stack.push(ctm);
    else if (fn === OPS.restore) ctm = stack.pop() ?? ctm;
    else if (fn === OPS.transform) ctm = multiply(ctm, args as Matrix);
    else if (fn === OPS.paintFormXObjectBegin) {
      stack.push(ctm);
      if (args[0]) ctm = multiply(ctm, args[0] as Matrix);
    } else if (fn === OPS.paintFormXObjectEnd) ctm = stack.pop() ?? ctm;
    else if (imageOps.has(fn)) drawing.paintsImage = true;
    else if (fn === OPS.constructPath) {
      const [paint, [path]] = args as [number, [Float32Array | null]];
      if (!path) continue;
      if (strokeOps.has(paint)) addStrokes(drawing, path, ctm);
      if (fillOps.has(paint)) addThinRectangles(drawing, path, ctm);
    }
  }
  return drawing;
}

function multiply(m: Matrix, n: Matrix): Matrix {
  return [
    m[0] * n[0] + m[2] * n[1],
    m[1] * n[0] + m[3] * n[1],
    m[0] * n[2] + m[2] * n[3],
    m[1] * n[2] + m[3] * n[3],
    m[0] * n[4] + m[2] * n[5] + m[4],
    m[1] * n[4] + m[3] * n[5] + m[5],
  ];
}

/** The path's subpaths as lists of points on the page; curves count by their end points only. */
function subpathsOf(path: Float32Array, m: Matrix): [number, number][][] {
  const subpaths: [number, number][][] = [];
  let current: [number, number][] = [];
  const point = (x: number, y: number): [number, number] => [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]];
  for (let k = 0; k < path.length;) {
    const op = path[k++];
    if (op === drawOps.moveTo) {
      if (current.length > 0) subpaths.push(current);
      current = [point(path[k]!, path[k + 1]!)];
      k += 2;
    } else if (op === drawOps.lineTo) {
      current.push(point(path[k]!, path[k + 1]!));
      k += 2;
    } else if (op === drawOps.curveTo) {
      // A curve is never a ruling: break the subpath so no straight segment is imagined across it.
      if (current.length > 0) subpaths.push(current);
      current = [point(path[k + 4]!, path[k + 5]!)];
      k += 6;
    } else if (op === drawOps.quadraticCurveTo) {
      if (current.length > 0) subpaths.push(current);
      current = [point(path[k + 2]!, path[k + 3]!)];
      k += 4;
    } else if (op === drawOps.closePath) {
      if (current.length > 1) current.push(current[0]!);
      subpaths.push(current);
      current = current.length > 0 ? [current[0]!] : [];
    } else break;
  }
  if (current.length > 1) subpaths.push(current);
  return subpaths;
}

function addStrokes(drawing: PageDrawing, path: Float32Array, m: Matrix): void {
  for (const points of subpathsOf(path, m)) {
    for (let i = 1; i < points.length; i++) addSegment(drawing, points[i - 1]!, points[i]!);
  }
}

function addSegment(drawing: PageDrawing, [x1, y1]: [number, number], [x2, y2]: [number, number]): void {
  if (Math.abs(y1 - y2) <= skewTolerance && Math.abs(x1 - x2) > skewTolerance) {
    drawing.horizontal.push({ position: (y1 + y2) / 2, start: Math.min(x1, x2), end: Math.max(x1, x2) });
  } else if (Math.abs(x1 - x2) <= skewTolerance && Math.abs(y1 - y2) > skewTolerance) {
    drawing.vertical.push({ position: (x1 + x2) / 2, start: Math.min(y1, y2), end: Math.max(y1, y2) });
  }
}

/** A filled subpath whose points make an axis-aligned box thin in one direction is a rule along its centre. */
function addThinRectangles(drawing: PageDrawing, path: Float32Array, m: Matrix): void {
  for (const points of subpathsOf(path, m)) {
    if (points.length < 4 || points.length > 5) continue;
    const xs = points.map((p) => p[0]);
    const ys = points.map((p) => p[1]);
    const [left, right, top, bottom] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const onEdges = points.every(([x, y]) => (near(x, left) || near(x, right)) && (near(y, top) || near(y, bottom)));
    if (!onEdges) continue;
    const width = right - left;
    const height = bottom - top;
    if (height <= maxRuleThickness && width > height * 2) {
      drawing.horizontal.push({ position: (top + bottom) / 2, start: left, end: right });
    } else if (width <= maxRuleThickness && height > width * 2) {
      drawing.vertical.push({ position: (left + right) / 2, start: top, end: bottom });
    }
  }
}

const near = (a: number, b: number) => Math.abs(a - b) < 0.1;
