import { EmptyState } from '../components/states';

export default function OverviewView() {
  return (
    <>
      <h1>Overview</h1>
      <EmptyState title="Nothing here yet" path="/v1/runs" />
    </>
  );
}
