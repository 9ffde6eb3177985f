import { EmptyState } from '../components/states';

export default function AuditLogView() {
  return (
    <>
      <h1>Audit log</h1>
      <EmptyState title="Nothing here yet" path="/v1/audit-logs" />
    </>
  );
}
