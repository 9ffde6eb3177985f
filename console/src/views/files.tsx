/** The project's files: upload, and a page of files whose statuses stay live while extraction runs. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link, useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { useApi } from '../use-api';
import { Async, EmptyState } from '../components/states';
import { FileStatusBadge, usePollWhile } from '../components/files-status';
import { UploadZone } from '../components/files-upload';
import { formatBytes, formatTime } from '../format';
import './files.css';

const PAGE_SIZE = 20;

type FileList = { data: Schemas['File'][]; first_id: string | null; last_id: string | null; has_more: boolean };

export default function FilesView() {
  const [search, setSearch] = useSearchParams();
  const after = search.get('after') ?? undefined;
  const before = search.get('before') ?? undefined;
  const purposeParam = search.get('purpose');
  const purpose = purposeParam === 'context' || purposeParam === 'attachment' ? purposeParam : undefined;

  const files = useApi(
    (signal) =>
      api.GET('/v1/files', { params: { query: { limit: PAGE_SIZE, after, before, purpose } }, signal }).then(unwrap) as Promise<FileList>,
    [after, before, purpose],
  );
  const processing = files.data?.data.some((f) => f.status === 'processing') ?? false;
  usePollWhile(processing, files, 1000);
  const changes = useStatusChanges(files.data?.data);

  const onUploaded = () => {
    // A new file is the newest: show the first page, where it is.
    if (after || before) setSearch((previous) => withoutCursor(previous));
    else files.reload();
  };

  return (
    <>
      <h1>Files</h1>
      <UploadZone onUploaded={onUploaded} />
      <section aria-labelledby="files-heading">
        <h2 id="files-heading">Uploaded files</h2>
        <div class="row">
          <div class="field">
            <label for="files-purpose">Show</label>
            <select
              id="files-purpose"
              value={purpose ?? ''}
              onChange={(event) => {
                const value = (event.currentTarget as HTMLSelectElement).value;
                setSearch((previous) => {
                  const next = withoutCursor(previous);
                  if (value) next.set('purpose', value);
                  else next.delete('purpose');
                  return next;
                });
              }}
            >
              <option value="">every purpose</option>
              <option value="context">context files</option>
              <option value="attachment">attachments</option>
            </select>
          </div>
        </div>
        <p class="visually-hidden" role="status" aria-live="polite">
          {changes}
        </p>
        <Async loaded={files} what="files">
          {(list) =>
            list.data.length === 0 && !after && !before ? (
              <EmptyState
                title={purpose ? `No ${purpose === 'context' ? 'context files' : 'attachments'} yet` : 'No files yet'}
                method="POST"
                path="/v1/files"
                form={['file=@report.pdf', `purpose=${purpose ?? 'context'}`]}
              >
                <p>Upload a file above, or from a terminal:</p>
              </EmptyState>
            ) : (
              <>
                <FilesTable files={list.data} />
                <Paging list={list} after={after} before={before} search={search} />
              </>
            )
          }
        </Async>
      </section>
    </>
  );
}

function FilesTable({ files }: { files: Schemas['File'][] }) {
  return (
    <table class="files">
      <caption class="visually-hidden">Files, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Filename</th>
          <th scope="col">Purpose</th>
          <th scope="col">Type</th>
          <th scope="col" class="number">
            Size
          </th>
          <th scope="col">Status</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {files.map((file) => (
          <tr key={file.id}>
            <th scope="row" class="filename">
              <Link href={`/files/${encodeURIComponent(file.id)}`}>{file.filename}</Link>
            </th>
            <td>{file.purpose}</td>
            <td>
              <code>{file.mime_type}</code>
            </td>
            <td class="number">{formatBytes(file.bytes)}</td>
            <td>
              <FileStatusBadge status={file.status} />
            </td>
            <td>{formatTime(file.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Newer and older pages by cursor, kept in the URL so a page is a link. */
function Paging({ list, after, before, search }: { list: FileList; after?: string; before?: string; search: URLSearchParams }) {
  const newer = before ? list.has_more : after !== undefined;
  const older = before !== undefined || list.has_more;
  const href = (key: 'after' | 'before', id: string | null) => {
    const next = withoutCursor(search);
    if (id) next.set(key, id);
    const query = next.toString();
    return query ? `/files?${query}` : '/files';
  };
  if (!newer && !older) return null;
  return (
    <nav class="paging" aria-label="Pages of files">
      {newer && list.first_id ? <Link href={href('before', list.first_id)}>← Newer</Link> : <span />}
      {older && list.last_id ? <Link href={href('after', list.last_id)}>Older →</Link> : <span />}
    </nav>
  );
}

function withoutCursor(search: URLSearchParams): URLSearchParams {
  const next = new URLSearchParams(search);
  next.delete('after');
  next.delete('before');
  return next;
}

/** A sentence for screen readers when a shown file's status changes between two loads. */
function useStatusChanges(files: Schemas['File'][] | undefined): string {
  const previous = useRef(new Map<string, string>());
  const [message, setMessage] = useState('');
  useEffect(() => {
    if (!files) return;
    const changed = files.filter((f) => previous.current.has(f.id) && previous.current.get(f.id) !== f.status);
    previous.current = new Map(files.map((f) => [f.id, f.status]));
    if (changed.length) setMessage(changed.map((f) => `${f.filename} is ${f.status}.`).join(' '));
  }, [files]);
  return message;
}
