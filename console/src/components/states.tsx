/** What a view shows while it loads, when loading failed, and when there is nothing yet. */
import type { ComponentChildren } from 'preact';
import { apiUrl } from '../api';

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function ErrorNotice({ error }: { error: Error }) {
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

/**
 * Nothing to show yet, and the command that would change that. `path` is the API path; `body` a JSON body
 * for a POST; `form` curl's -F arguments for an upload.
 */
export function EmptyState({
  title,
  children,
  method = 'GET',
  path,
  body,
  form,
}: {
  title: string;
  children?: ComponentChildren;
  method?: 'GET' | 'POST';
  path: string;
  body?: unknown;
  form?: string[];
}) {
  const lines = [`curl${method === 'POST' ? ' -X POST' : ''} ${apiUrl(path)} \\`, '  -H "Authorization: Bearer $AGENTPLANE_API_KEY"'];
  // Each line but the last ends with a backslash, so the command pastes as one.
  const add = (...more: string[]) => {
    lines[lines.length - 1] += ' \\';
    lines.push(...more);
  };
  if (body !== undefined) add("  -H 'Content-Type: application/json' \\", `  -d '${JSON.stringify(body)}'`);
  for (const field of form ?? []) add(`  -F '${field}'`);
  return (
    <section class="empty" aria-label={title}>
      <h2>{title}</h2>
      {children}
      <pre class="curl">
        <code>{lines.join('\n')}</code>
      </pre>
    </section>
  );
}

/** The API's answer to a view's load: loading, an error, or the view itself. */
export function Async<T>({
  loaded,
  what,
  children,
}: {
  loaded: { data?: T; error?: Error };
  what: string;
  children: (data: T) => ComponentChildren;
}) {
  if (loaded.error) return <ErrorNotice error={loaded.error} />;
  if (loaded.data === undefined) return <Loading what={what} />;
  return <>{children(loaded.data)}</>;
}
