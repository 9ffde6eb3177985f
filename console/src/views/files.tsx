import { EmptyState } from '../components/states';

export default function FilesView() {
  return (
    <>
      <h1>Files</h1>
      <EmptyState title="Nothing here yet" path="/v1/files" />
    </>
  );
}
