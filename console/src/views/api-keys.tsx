import { EmptyState } from '../components/states';

export default function ApiKeysView() {
  return (
    <>
      <h1>API keys</h1>
      <EmptyState title="Nothing here yet" path="/v1/api-keys" />
    </>
  );
}
