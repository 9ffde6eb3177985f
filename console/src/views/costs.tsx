import { EmptyState } from '../components/states';

export default function CostsView() {
  return (
    <>
      <h1>Costs</h1>
      <EmptyState title="Nothing here yet" path="/v1/analytics/costs" />
    </>
  );
}
