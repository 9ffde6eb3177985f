import { EmptyState } from '../components/states';

export default function QualityView() {
  return (
    <>
      <h1>Quality</h1>
      <EmptyState title="Nothing here yet" path="/v1/analytics/quality" />
    </>
  );
}
