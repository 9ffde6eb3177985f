import { EmptyState } from '../components/states';

export default function RunsView() {
  return (
    <>
      <h1>Runs</h1>
      <EmptyState title="Nothing here yet" path="/v1/runs" />
    </>
  );
}
