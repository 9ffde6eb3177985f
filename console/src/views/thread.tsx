/** One thread: its messages in order, each with the run that added it, the runs made on it, and deleting it. */
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { ConfirmButton } from '../components/admin-confirm';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async } from '../components/states';
import { formatCount, formatTime, formatUsd } from '../format';
import { useApi } from '../use-api';
import './admin.css';

const PAGE_SIZE = 50;

export default function ThreadView({ params }: { params: { id: string } }) {
  const thread = useApi((signal) => api.GET('/v1/threads/{id}', { params: { path: { id: params.id } }, signal }).then(unwrap), [params.id]);
  return (
    <>
      <p>
        <Link href="/threads">← Threads</Link>
      </p>
      <Async loaded={thread} what="the thread">
        {(data) => <Thread thread={data} />}
      </Async>
    </>
  );
}

function Thread({ thread }: { thread: Schemas['Thread'] }) {
  const [, navigate] = useLocation();
  const [error, setError] = useState<string>();
  const cursor = useCursor();
  const messages = useApi(
    (signal) =>
      api
        .GET('/v1/threads/{id}/messages', { params: { path: { id: thread.id }, query: { limit: PAGE_SIZE, ...cursor } }, signal })
        .then(unwrap),
    [thread.id, cursor.after, cursor.before],
  );
  const runs = useApi(
    (signal) => api.GET('/v1/runs', { params: { query: { thread_id: thread.id, limit: 20 } }, signal }).then(unwrap),
    [thread.id],
  );
  const remove = async () => {
    setError(undefined);
    try {
      unwrap(await api.DELETE('/v1/threads/{id}', { params: { path: { id: thread.id } } }));
      navigate('/threads');
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <>
      <h1>
        Thread <code class="id">{thread.id}</code>
      </h1>
      <dl class="facts">
        <dt>Subject</dt>
        <dd>
          {thread.subject_id ? (
            <Link href={`/memories?subject_id=${encodeURIComponent(thread.subject_id)}`}>{thread.subject_id}</Link>
          ) : (
            <span class="muted">none</span>
          )}
        </dd>
        <dt>Messages</dt>
        <dd>{formatCount(thread.message_count)}</dd>
        <dt>Created</dt>
        <dd>{formatTime(thread.created_at)}</dd>
        <dt>Updated</dt>
        <dd>{formatTime(thread.updated_at)}</dd>
        {Object.entries(thread.metadata).map(([key, value]) => (
          <>
            <dt>{key}</dt>
            <dd>{value}</dd>
          </>
        ))}
      </dl>
      <section aria-labelledby="messages-title">
        <h2 id="messages-title">Messages</h2>
        <Async loaded={messages} what="the messages">
          {(page) =>
            page.data.length === 0 ? (
              <p class="muted">No run on this thread has completed yet.</p>
            ) : (
              <>
                <ol class="conversation">
                  {page.data.map((message) => (
                    <li key={message.id} class={`message ${message.role}`}>
                      <p class="muted">
                        {message.role === 'user' ? 'User' : 'Assistant'} · {formatTime(message.created_at)} · <IdLink id={message.run_id} />
                      </p>
                      <p class="content">{message.content}</p>
                    </li>
                  ))}
                </ol>
                <Pager page={page} what="messages" />
              </>
            )
          }
        </Async>
      </section>
      <section aria-labelledby="thread-runs-title">
        <h2 id="thread-runs-title">Runs on this thread</h2>
        <Async loaded={runs} what="the runs">
          {(page) =>
            page.data.length === 0 ? (
              <p class="muted">No run yet.</p>
            ) : (
              <table class="listing">
                <thead>
                  <tr>
                    <th scope="col">Run</th>
                    <th scope="col">Agent or network</th>
                    <th scope="col">Status</th>
                    <th scope="col">Cost</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((run) => (
                    <tr key={run.id}>
                      <td>
                        <IdLink id={run.id} />
                      </td>
                      <td>
                        <IdLink id={run.agent_id ?? run.network_id} />
                      </td>
                      <td>{run.status}</td>
                      <td>{formatUsd(run.cost)}</td>
                      <td>{formatTime(run.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </Async>
      </section>
      <section aria-labelledby="thread-delete-title">
        <h2 id="thread-delete-title">Delete</h2>
        <p class="muted">
          Deletes the thread and its messages, the memories learned only from it, and the conversation its runs hold. The runs stay, with
          their cost.
        </p>
        <ConfirmButton label="Delete thread" confirmLabel="Delete the thread" question="Delete it, with its messages?" onConfirm={remove} />
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </section>
    </>
  );
}
