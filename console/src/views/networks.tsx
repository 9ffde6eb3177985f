import { EmptyState } from '../components/states';

export default function NetworksView() {
  return (
    <>
      <h1>Networks</h1>
      <EmptyState title="Nothing here yet" path="/v1/networks" />
    </>
  );
}
