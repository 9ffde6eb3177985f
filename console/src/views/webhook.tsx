import { EmptyState } from '../components/states';

export default function WebhookView({ params }: { params: { id: string } }) {
  return (
    <>
      <h1>Webhook <code>{params.id}</code></h1>
      <EmptyState title="Nothing here yet" path="/v1/webhooks" />
    </>
  );
}
