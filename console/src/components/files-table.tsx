/** A table extracted from a file, drawn as the HTML table it was: spanning cells span, the first row heads. */
import type { Schemas } from '../api';

type Cell = Schemas['FileTable']['cells'][number];

const DETECTION: Record<Schemas['FileTable']['detection'], string> = {
  ruled: 'found by its drawn rules',
  aligned: 'found by its aligned columns',
  delimited: 'read from delimited text',
};

/** Row by row, the cells that start in it, with an empty cell wherever no cell starts or spans. */
function layout(table: Schemas['FileTable']): (Cell | null)[][] {
  const covered = new Set<string>();
  const starting = new Map(table.cells.map((cell) => [`${cell.row}:${cell.column}`, cell]));
  const rowCount = Math.max(table.rows, ...table.cells.map((c) => c.row + 1));
  const rows: (Cell | null)[][] = [];
  for (let r = 0; r < rowCount; r++) {
    const row: (Cell | null)[] = [];
    for (let c = 0; c < table.columns; c++) {
      if (covered.has(`${r}:${c}`)) continue;
      const cell = starting.get(`${r}:${c}`) ?? null;
      row.push(cell);
      if (!cell) continue;
      for (let dr = 0; dr < cell.row_span; dr++) for (let dc = 0; dc < cell.column_span; dc++) covered.add(`${r + dr}:${c + dc}`);
    }
    rows.push(row);
  }
  return rows;
}

export function ExtractedTable({ table, index }: { table: Schemas['FileTable']; index: number }) {
  const rows = layout(table);
  // A header cell spanning into the body cannot sit in a <thead>: then every row is body.
  const headed = rows.length > 1 && (rows[0] ?? []).every((cell) => !cell || cell.row_span === 1);
  const head = headed ? rows[0] : undefined;
  const body = headed ? rows.slice(1) : rows;
  const span = (cell: Cell | null) => ({
    colSpan: cell && cell.column_span > 1 ? cell.column_span : undefined,
    rowSpan: cell && cell.row_span > 1 ? cell.row_span : undefined,
  });
  return (
    <figure class="extracted-table">
      <table>
        <caption>
          Table {index} · page {table.page} · {table.rows} × {table.columns}
          <span class="muted"> · {DETECTION[table.detection]}</span>
        </caption>
        {head && (
          <thead>
            <tr>
              {head.map((cell, i) => (
                <th key={i} scope={cell && cell.column_span > 1 ? 'colgroup' : 'col'} {...span(cell)}>
                  {cell?.text ?? ''}
                </th>
              ))}
            </tr>
          </thead>
        )}
        <tbody>
          {body.map((row, r) => (
            <tr key={r}>
              {row.map((cell, c) => (
                <td key={c} {...span(cell)}>
                  {cell?.text ?? ''}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {table.truncated && (
        <figcaption class="notice">This table had more rows than are kept here; the page's text has them all.</figcaption>
      )}
    </figure>
  );
}
