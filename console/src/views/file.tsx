import { EmptyState } from '../components/states';

export default function FileView({ params }: { params: { id: string } }) {
  return (
    <>
      <h1>File <code>{params.id}</code></h1>
      <EmptyState title="Nothing here yet" path="/v1/files" />
    </>
  );
}
