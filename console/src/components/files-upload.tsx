/**
 * Uploading files: a drop zone that is also an ordinary, labelled file input, a purpose, and one progress bar
 * per upload. XMLHttpRequest rather than fetch, because only it reports the bytes sent.
 */
import { useRef, useState } from 'preact/hooks';
import { ApiError, apiUrl, type Schemas } from '../api';
import { session } from '../session';
import { formatBytes } from '../format';
import { IdLink } from './links';

type Purpose = Schemas['FilePurpose'];

interface Upload {
  key: number;
  name: string;
  bytes: number;
  /** 0 to 1 while sending. */
  sent: number;
  state: 'sending' | 'uploaded' | 'refused' | 'cancelled';
  file?: Schemas['File'];
  error?: string;
  abort?: () => void;
}

/** Sends one file as `multipart/form-data` with the session's cookie and CSRF token. */
function sendFile(
  file: File,
  purpose: Purpose,
  onProgress: (fraction: number) => void,
): { done: Promise<Schemas['File']>; abort: () => void } {
  const request = new XMLHttpRequest();
  const done = new Promise<Schemas['File']>((resolve, reject) => {
    request.open('POST', apiUrl('/v1/files'));
    // Same-origin: the session cookie goes along without withCredentials.
    request.withCredentials = false;
    request.responseType = 'json';
    request.setRequestHeader('Accept', 'application/json');
    const token = session.current()?.csrf_token;
    if (token) request.setRequestHeader('X-CSRF-Token', token);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
    };
    request.onload = () => {
      if (request.status >= 200 && request.status < 300) return resolve(request.response as Schemas['File']);
      if (request.status === 401) session.ended();
      const body = request.response as { error?: { code?: string; message?: string } } | null;
      reject(
        new ApiError(request.status, body?.error?.code ?? 'error', body?.error?.message ?? `The API answered HTTP ${request.status}.`),
      );
    };
    request.onerror = () => reject(new Error('The upload did not reach the API. Check the connection and try again.'));
    request.onabort = () => reject(new DOMException('The upload was cancelled.', 'AbortError'));
    const form = new FormData();
    form.append('purpose', purpose);
    form.append('file', file, file.name);
    request.send(form);
  });
  return { done, abort: () => request.abort() };
}

let nextKey = 1;

export function UploadZone({ onUploaded }: { onUploaded: (file: Schemas['File']) => void }) {
  const [purpose, setPurpose] = useState<Purpose>('context');
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [dragging, setDragging] = useState(false);
  const [announcement, setAnnouncement] = useState('');
  const input = useRef<HTMLInputElement>(null);

  const update = (key: number, change: Partial<Upload>) => setUploads((all) => all.map((u) => (u.key === key ? { ...u, ...change } : u)));

  function start(files: FileList | File[]) {
    for (const file of Array.from(files)) {
      const key = nextKey++;
      const { done, abort } = sendFile(file, purpose, (sent) => update(key, { sent }));
      const upload: Upload = { key, name: file.name, bytes: file.size, sent: 0, state: 'sending', abort };
      setUploads((all) => [upload, ...all].slice(0, 10));
      setAnnouncement(`Uploading ${file.name}.`);
      done.then(
        (uploaded) => {
          update(key, { state: 'uploaded', sent: 1, file: uploaded, abort: undefined });
          setAnnouncement(`${file.name} uploaded; extraction has begun.`);
          onUploaded(uploaded);
        },
        (error: Error) => {
          const cancelled = error.name === 'AbortError';
          update(key, { state: cancelled ? 'cancelled' : 'refused', error: error.message, abort: undefined });
          setAnnouncement(cancelled ? `The upload of ${file.name} was cancelled.` : `${file.name} was not uploaded: ${error.message}`);
        },
      );
    }
    if (input.current) input.current.value = '';
  }

  return (
    <section class="upload" aria-labelledby="upload-heading">
      <h2 id="upload-heading">Upload</h2>
      <div class="row">
        <div class="field">
          <label for="upload-purpose">Purpose</label>
          <select
            id="upload-purpose"
            value={purpose}
            onChange={(event) => setPurpose((event.currentTarget as HTMLSelectElement).value as Purpose)}
          >
            <option value="context">context — extracted into the graph</option>
            <option value="attachment">attachment — for runs only</option>
          </select>
        </div>
      </div>
      <div
        class={dragging ? 'dropzone dragging' : 'dropzone'}
        role="group"
        aria-label="Drop zone for uploads"
        onDragEnter={(event) => (event.preventDefault(), setDragging(true))}
        onDragOver={(event) => {
          event.preventDefault();
          if (event.dataTransfer) event.dataTransfer.dropEffect = 'copy';
        }}
        onDragLeave={(event) => {
          if (!(event.currentTarget as Element).contains(event.relatedTarget as Node | null)) setDragging(false);
        }}
        onDrop={(event) => {
          event.preventDefault();
          setDragging(false);
          if (event.dataTransfer?.files.length) start(event.dataTransfer.files);
        }}
      >
        <label id="upload-file-label" for="upload-file">
          Choose files or drop them here
        </label>
        <input
          id="upload-file"
          ref={input}
          type="file"
          multiple
          aria-describedby="upload-hint"
          onChange={(event) => {
            const files = (event.currentTarget as HTMLInputElement).files;
            if (files?.length) start(files);
          }}
        />
        <p id="upload-hint" class="muted">
          PDF, PNG, JPEG, WAV, M4A or plain text, up to 100 MB each. Uploading starts as soon as a file is chosen.
        </p>
      </div>
      <p class="visually-hidden" role="status" aria-live="polite">
        {announcement}
      </p>
      {uploads.length > 0 && (
        <ul class="uploads" aria-label="Uploads">
          {uploads.map((u) => (
            <li key={u.key}>
              <span class="upload-name">{u.name}</span> <span class="muted">{formatBytes(u.bytes)}</span>{' '}
              {u.state === 'sending' && (
                <>
                  <progress max={1} value={u.sent} aria-label={`Upload of ${u.name}`} /> <span>{Math.round(u.sent * 100)}%</span>{' '}
                  <button type="button" class="plain" onClick={() => u.abort?.()}>
                    Cancel<span class="visually-hidden"> the upload of {u.name}</span>
                  </button>
                </>
              )}
              {u.state === 'uploaded' && u.file && (
                <span>
                  uploaded as <IdLink id={u.file.id} />
                </span>
              )}
              {u.state === 'refused' && (
                <span class="error" role="alert">
                  Refused: {u.error}
                </span>
              )}
              {u.state === 'cancelled' && <span class="muted">cancelled</span>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
