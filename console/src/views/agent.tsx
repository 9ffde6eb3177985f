import { EmptyState } from '../components/states';

export default function AgentView({ params }: { params: { id: string } }) {
  return (
    <>
      <h1>Agent <code>{params.id}</code></h1>
      <EmptyState title="Nothing here yet" path="/v1/agents" />
    </>
  );
}
