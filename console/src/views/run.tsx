import { EmptyState } from '../components/states';

export default function RunView({ params }: { params: { id: string } }) {
  return (
    <>
      <h1>Run <code>{params.id}</code></h1>
      <EmptyState title="Nothing here yet" path="/v1/runs" />
    </>
  );
}
