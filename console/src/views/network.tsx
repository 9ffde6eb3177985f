import { EmptyState } from '../components/states';

export default function NetworkView({ params }: { params: { id: string } }) {
  return (
    <>
      <h1>Network <code>{params.id}</code></h1>
      <EmptyState title="Nothing here yet" path="/v1/networks" />
    </>
  );
}
