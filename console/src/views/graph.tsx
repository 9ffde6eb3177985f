import { EmptyState } from '../components/states';

export default function GraphView() {
  return (
    <>
      <h1>Graph</h1>
      <EmptyState title="Nothing here yet" path="/v1/graph/search" />
    </>
  );
}
