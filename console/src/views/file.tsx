/** One file: its status (live until extraction settles), what was extracted, and deleting it with its graph items. */
import { useState } from 'preact/hooks';
import { Link, useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { useApi } from '../use-api';
import { Async, ErrorNotice } from '../components/states';
import { FileStatusBadge, usePollWhile } from '../components/files-status';
import { GraphItemsSection, PagesSection, TablesSection, TranscriptSection } from '../components/files-content';
import { formatBytes, formatCount, formatTime } from '../format';
import './files.css';

type File = Schemas['File'];

export default function FileView({ params }: { params: { id: string } }) {
  const id = params.id;
  const [search] = useSearchParams();
  const page = Number.parseInt(search.get('page') ?? '1', 10) || 1;
  const [deleted, setDeleted] = useState<{ filename: string; result: Schemas['DeletedFile'] }>();
  const file = useApi((signal) => api.GET('/v1/files/{id}', { params: { path: { id } }, signal }).then(unwrap), [id]);
  usePollWhile(!deleted && file.data?.status === 'processing', file, 1000);

  if (deleted) {
    return (
      <>
        <h1>{deleted.filename}</h1>
        <p role="status" class="notice">
          Deleted <code>{deleted.result.id}</code>: {formatCount(deleted.result.graph_items_removed)} graph{' '}
          {deleted.result.graph_items_removed === 1 ? 'item' : 'items'} removed.
        </p>
        <p>
          <Link href="/files">Back to the files</Link>
        </p>
      </>
    );
  }

  return (
    <Async loaded={file} what="the file">
      {(f) => (
        <>
          <h1>{f.filename}</h1>
          <p class="file-status" role="status" aria-live="polite">
            Status: <FileStatusBadge status={f.status} />
            {f.status === 'processing' && <span class="muted"> — extracting; this page follows it.</span>}
          </p>
          {f.status === 'failed' && f.last_error && (
            <p class="notice error-notice">
              Extraction failed (<code>{f.last_error.code}</code>): {f.last_error.message}
            </p>
          )}
          <Facts file={f} />
          {f.status === 'processed' && (
            <>
              {f.mime_type.startsWith('audio/') ? <TranscriptSection file={f} /> : <PagesSection file={f} page={page} />}
              <TablesSection file={f} />
              <GraphItemsSection file={f} />
            </>
          )}
          <DeleteSection file={f} onDeleted={(result) => setDeleted({ filename: f.filename, result })} />
        </>
      )}
    </Async>
  );
}

function Facts({ file }: { file: File }) {
  const metadata = Object.entries(file.metadata);
  return (
    <dl class="facts">
      <dt>ID</dt>
      <dd>
        <code class="id">{file.id}</code>
      </dd>
      <dt>Purpose</dt>
      <dd>{file.purpose === 'context' ? 'context (extracted into the graph)' : 'attachment (for runs only)'}</dd>
      <dt>Type</dt>
      <dd>
        <code>{file.mime_type}</code>
      </dd>
      <dt>Size</dt>
      <dd>{formatBytes(file.bytes)}</dd>
      <dt>Created</dt>
      <dd>{formatTime(file.created_at)}</dd>
      <dt>Processed</dt>
      <dd>{formatTime(file.processed_at)}</dd>
      <dt>Extracted</dt>
      <dd>
        {formatCount(file.extracted.pages)} {file.extracted.pages === 1 ? 'page' : 'pages'}, {formatCount(file.extracted.tables)}{' '}
        {file.extracted.tables === 1 ? 'table' : 'tables'}, {formatCount(file.extracted.graph_items)} graph{' '}
        {file.extracted.graph_items === 1 ? 'item' : 'items'}
      </dd>
      {metadata.length > 0 && (
        <>
          <dt>Metadata</dt>
          <dd>
            <dl class="metadata">
              {metadata.map(([key, value]) => (
                <div key={key}>
                  <dt>{key}</dt>
                  <dd>{value}</dd>
                </div>
              ))}
            </dl>
          </dd>
        </>
      )}
    </dl>
  );
}

function DeleteSection({ file, onDeleted }: { file: File; onDeleted: (result: Schemas['DeletedFile']) => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const items = file.extracted.graph_items;

  async function remove() {
    setBusy(true);
    setError(undefined);
    try {
      onDeleted(unwrap(await api.DELETE('/v1/files/{id}', { params: { path: { id: file.id } } })));
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="delete-heading" class="danger-zone">
      <h2 id="delete-heading">Delete</h2>
      {!confirming ? (
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Delete this file
        </button>
      ) : (
        <div role="alertdialog" aria-labelledby="delete-question" aria-describedby="delete-consequence" class="confirm">
          <p id="delete-question">
            <strong>Delete {file.filename}?</strong>
          </p>
          <p id="delete-consequence">
            This removes the file, its text and tables, and {formatCount(items)} graph {items === 1 ? 'item' : 'items'} extracted from it
            (with every graph node no other file supports).{file.status === 'processing' && ' Extraction still running is cancelled.'} Audit
            log entries stay.
          </p>
          <div class="row">
            <button type="button" class="danger" disabled={busy} onClick={() => void remove()}>
              Delete the file and {formatCount(items)} graph {items === 1 ? 'item' : 'items'}
            </button>
            <button type="button" class="plain" disabled={busy} onClick={() => setConfirming(false)} autoFocus>
              Keep it
            </button>
          </div>
          {error && <ErrorNotice error={error} />}
        </div>
      )}
    </section>
  );
}
