/**
 * A node's neighbourhood drawn with Cytoscape, loaded only when a node is shown. The drawing repeats the
 * relations table beside it, so it is one image to assistive technology; clicking a neighbour opens it.
 * Cytoscape paints on canvases and positions them through element.style, which the console's CSP allows.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'wouter-preact';

export interface Neighbour {
  id: string;
  name: string;
  type: string;
  /** Relation names towards (outgoing) or from (incoming) the neighbour. */
  outgoing: string[];
  incoming: string[];
}

/** The drawing shows at most this many neighbours, the best supported first. */
const MAX_NEIGHBOURS = 40;

function themeColours() {
  const css = getComputedStyle(document.documentElement);
  const read = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    fg: read('--fg', '#16181d'),
    muted: read('--muted', '#555c68'),
    accent: read('--accent', '#1f5fd1'),
    bg: read('--bg', '#ffffff'),
    border: read('--border', '#d5d9e0'),
  };
}

export function NeighbourhoodDrawing({
  center,
  neighbours,
}: {
  center: { id: string; name: string; type: string };
  neighbours: Neighbour[];
}) {
  const container = useRef<HTMLDivElement>(null);
  const [, navigate] = useLocation();
  const [failed, setFailed] = useState(false);
  const shown = neighbours.slice(0, MAX_NEIGHBOURS);

  useEffect(() => {
    let destroyed = false;
    let teardown = () => {};
    import('cytoscape')
      .then(({ default: cytoscape }) => {
        if (destroyed || !container.current) return;
        const style = () => {
          const c = themeColours();
          return [
            {
              selector: 'node',
              style: {
                label: 'data(label)',
                'font-size': 11,
                color: c.fg,
                'background-color': c.bg,
                'border-width': 2,
                'border-color': c.muted,
                'text-valign': 'bottom',
                'text-margin-y': 4,
                width: 18,
                height: 18,
              },
            },
            {
              selector: 'node.center',
              style: { 'border-color': c.accent, 'background-color': c.accent, width: 26, height: 26, 'font-weight': 'bold' },
            },
            {
              selector: 'edge',
              style: {
                width: 1.5,
                'line-color': c.muted,
                'target-arrow-color': c.muted,
                'target-arrow-shape': 'triangle',
                'curve-style': 'bezier',
                label: 'data(label)',
                'font-size': 9,
                color: c.fg,
                'text-rotation': 'autorotate',
                'text-background-color': c.bg,
                'text-background-opacity': 1,
                'text-background-padding': '2px',
              },
            },
          ];
        };
        const cy = cytoscape({
          container: container.current,
          elements: [
            { data: { id: center.id, label: center.name }, classes: 'center' },
            ...shown.map((n) => ({ data: { id: n.id, label: n.name } })),
            ...shown.flatMap((n) => [
              ...(n.outgoing.length
                ? [{ data: { id: `${center.id}>${n.id}`, source: center.id, target: n.id, label: n.outgoing.join(', ') } }]
                : []),
              ...(n.incoming.length
                ? [{ data: { id: `${n.id}>${center.id}`, source: n.id, target: center.id, label: n.incoming.join(', ') } }]
                : []),
            ]),
          ],
          // Cytoscape's style typings lag its stylesheet; the properties above are its documented ones.
          style: style() as never,
          layout: {
            name: 'concentric',
            concentric: (node: { hasClass: (c: string) => boolean }) => (node.hasClass('center') ? 2 : 1),
            levelWidth: () => 1,
            minNodeSpacing: 90,
            padding: 30,
            animate: false,
          } as never,
          // Few neighbours would otherwise be blown up to fill the box.
          maxZoom: 1.4,
          minZoom: 0.2,
          userZoomingEnabled: true,
          boxSelectionEnabled: false,
          autoungrabify: true,
        });
        cy.on('tap', 'node', (event) => {
          const id = event.target.id() as string;
          if (id !== center.id) navigate(`/graph/nodes/${encodeURIComponent(id)}`);
        });
        // The colours follow the theme switch.
        const observer = new MutationObserver(() => cy.style(style() as never));
        observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
        teardown = () => {
          observer.disconnect();
          cy.destroy();
        };
      })
      .catch(() => destroyed || setFailed(true));
    return () => {
      destroyed = true;
      teardown();
    };
    // The drawing is made again for another node or another neighbourhood.
  }, [center.id, shown.map((n) => n.id).join(' ')]);

  const label =
    `Drawing of the neighbourhood of ${center.name}: ${shown.length} related ${shown.length === 1 ? 'entity' : 'entities'}` +
    (shown.length ? ` (${shown.map((n) => n.name).join(', ')})` : '') +
    '. The relations table lists the same.';
  return failed ? (
    <p class="muted">The drawing could not be loaded; the relations are listed below.</p>
  ) : (
    <div ref={container} class="graph-drawing" role="img" aria-label={label} />
  );
}
