import { EmptyState } from '../components/states';

export default function WebhooksView() {
  return (
    <>
      <h1>Webhooks</h1>
      <EmptyState title="Nothing here yet" path="/v1/webhooks" />
    </>
  );
}
