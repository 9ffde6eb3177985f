/** Pieces of the agent and network detail views: facts, metadata, tools, versions, and deleting. */
import { Fragment, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useLocation } from 'wouter-preact';
import { ApiError, type Schemas } from '../api';
import { formatTime } from '../format';
import { IdLink } from './links';

export function Facts({ rows }: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {rows.map(([term, value]) => (
        <Fragment key={term}>
          <dt>{term}</dt>
          <dd>{value ?? <span class="muted">—</span>}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

export function MetadataList({ metadata }: { metadata: Schemas['Metadata'] | null | undefined }) {
  const entries = Object.entries(metadata ?? {});
  if (entries.length === 0) return <p class="muted">No metadata.</p>;
  return <Facts rows={entries.map(([key, value]) => [key, <code>{String(value)}</code>])} />;
}

export function ToolsTable({ tools }: { tools: Schemas['AgentTool'][] }) {
  if (tools.length === 0) return <p class="muted">No tools: the agent answers from its model alone.</p>;
  return (
    <table class="records">
      <caption class="visually-hidden">Tools</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Type</th>
          <th scope="col">Calls</th>
          <th scope="col">Description</th>
        </tr>
      </thead>
      <tbody>
        {tools.map((tool) =>
          tool.type === 'http' ? (
            <tr key={tool.name}>
              <th scope="row">{tool.name}</th>
              <td>HTTP</td>
              <td>
                <code>
                  {tool.method ?? 'POST'} {tool.url}
                </code>
              </td>
              <td>{tool.description ?? <span class="muted">—</span>}</td>
            </tr>
          ) : tool.type === 'a2a' ? (
            <tr key={tool.name}>
              <th scope="row">{tool.name}</th>
              <td>A2A agent</td>
              <td>
                <code>{tool.card_url}</code>
              </td>
              <td>{tool.description ?? <span class="muted">The card's description</span>}</td>
            </tr>
          ) : tool.type === 'builtin' ? (
            <tr key={`builtin:${tool.name}`}>
              <th scope="row">{tool.name}</th>
              <td>Built-in</td>
              <td>
                <span class="muted">—</span>
              </td>
              <td>{tool.approval && tool.approval.mode !== 'never' ? `Approval: ${tool.approval.mode}` : 'Guards only'}</td>
            </tr>
          ) : (
            <tr key={tool.server_label}>
              <th scope="row">{tool.server_label}</th>
              <td>MCP server</td>
              <td>
                <code>{tool.server_url}</code>
              </td>
              <td>{tool.allowed_tools?.length ? `Only ${tool.allowed_tools.join(', ')}` : 'Every tool the server offers'}</td>
            </tr>
          ),
        )}
      </tbody>
    </table>
  );
}

/**
 * The API keeps an object's current version, and every run records the version it ran: the versions this
 * shows are the current one and those the recent runs used.
 */
export function VersionsTable({
  current,
  updatedAt,
  runs,
  of,
}: {
  current: number;
  updatedAt: number;
  runs: Schemas['RunSummary'][];
  of: 'agent' | 'network';
}) {
  const byVersion = new Map<number, Schemas['RunSummary'][]>([[current, []]]);
  for (const run of runs) {
    const version = of === 'agent' ? run.agent_version : run.network_version;
    if (version !== null) byVersion.set(version, [...(byVersion.get(version) ?? []), run]);
  }
  const versions = [...byVersion.keys()].sort((a, b) => b - a);
  return (
    <table class="records">
      <caption class="visually-hidden">Versions</caption>
      <thead>
        <tr>
          <th scope="col">Version</th>
          <th scope="col" class="number">
            Recent runs
          </th>
          <th scope="col">Latest run</th>
        </tr>
      </thead>
      <tbody>
        {versions.map((version) => {
          const used = byVersion.get(version) ?? [];
          return (
            <tr key={version}>
              <th scope="row">
                {version}
                {version === current && <span class="muted"> (current, since {formatTime(updatedAt)})</span>}
              </th>
              <td class="number">{used.length}</td>
              <td>{used[0] ? <IdLink id={used[0].id} /> : <span class="muted">—</span>}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Delete with a confirmation step in the page (no modal): the runs stay readable. */
export function DeleteControl({
  what,
  name,
  remove,
  back,
}: {
  what: 'agent' | 'network';
  name: string;
  remove: () => Promise<unknown>;
  back: string;
}) {
  const [, navigate] = useLocation();
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  async function confirm() {
    setBusy(true);
    try {
      await remove();
      navigate(back);
    } catch (failure) {
      setError(failure instanceof ApiError ? `${failure.message} (${failure.code})` : String(failure));
      setBusy(false);
    }
  }
  if (!asking)
    return (
      <div class="detail-actions">
        <button type="button" class="plain" onClick={() => setAsking(true)}>
          Delete {what}
        </button>
      </div>
    );
  return (
    <div class="confirm" role="group" aria-label={`Delete ${what}`}>
      <p>
        Delete the {what} <strong>{name}</strong>? New runs are refused; its runs stay readable.
      </p>
      <div class="detail-actions">
        <button type="button" class="danger" onClick={confirm} disabled={busy}>
          Yes, delete {name}
        </button>
        <button type="button" class="plain" onClick={() => setAsking(false)} disabled={busy}>
          Cancel
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
