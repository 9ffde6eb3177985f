/** The context graph: search (`/graph?q=…`), and one node with its provenance (`/graph/nodes/:id`). */
import { GraphSearch } from '../components/graph-search';
import { GraphNodeView } from '../components/graph-node';
import './files.css';

export default function GraphView({ params }: { params: { id?: string } }) {
  return params.id ? <GraphNodeView id={params.id} /> : <GraphSearch />;
}
