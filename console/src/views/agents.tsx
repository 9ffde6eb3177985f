import { EmptyState } from '../components/states';

export default function AgentsView() {
  return (
    <>
      <h1>Agents</h1>
      <EmptyState title="Nothing here yet" path="/v1/agents" />
    </>
  );
}
