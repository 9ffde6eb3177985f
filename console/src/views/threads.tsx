/** The project's threads: conversations that last, found by subject or by the words of their messages. */
import { useState } from 'preact/hooks';
import { Link, useSearchParams } from 'wouter-preact';
import { api, unwrap } from '../api';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async, EmptyState } from '../components/states';
import { formatCount, formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

const PAGE_SIZE = 25;

export default function ThreadsView() {
  const [search, setSearch] = useSearchParams();
  const cursor = useCursor();
  const q = search.get('q') || undefined;
  const subject = search.get('subject_id') || undefined;
  const [words, setWords] = useState(q ?? '');
  const [who, setWho] = useState(subject ?? '');
  const threads = useApi(
    (signal) => api.GET('/v1/threads', { params: { query: { limit: PAGE_SIZE, ...cursor, q, subject_id: subject } }, signal }).then(unwrap),
    [cursor.after, cursor.before, q, subject],
  );
  const find = (event: Event) => {
    event.preventDefault();
    setSearch(() => {
      const next = new URLSearchParams();
      if (words.trim()) next.set('q', words.trim());
      if (who.trim()) next.set('subject_id', who.trim());
      return next;
    });
  };

  return (
    <>
      <h1>Threads</h1>
      <p class="muted">Conversations that last: every run made with a thread's id reads its messages and adds its turn.</p>
      <form class="row" role="search" onSubmit={find}>
        <div class="field">
          <label for="threads-q">Messages containing</label>
          <input id="threads-q" type="search" value={words} onInput={(e) => setWords(e.currentTarget.value)} maxLength={256} />
        </div>
        <div class="field">
          <label for="threads-subject">Subject</label>
          <input id="threads-subject" value={who} onInput={(e) => setWho(e.currentTarget.value)} maxLength={256} />
        </div>
        <button type="submit">Find</button>
      </form>
      <Async loaded={threads} what="threads">
        {(page) =>
          page.data.length === 0 && !q && !subject && !cursor.after && !cursor.before ? (
            <EmptyState title="No threads yet" method="POST" path="/v1/threads" body={{ subject_id: 'customer-42' }}>
              <p>Create one, then run an agent with its `thread_id`:</p>
            </EmptyState>
          ) : page.data.length === 0 ? (
            <p class="muted">No thread matches.</p>
          ) : (
            <>
              <table class="listing">
                <thead>
                  <tr>
                    <th scope="col">Thread</th>
                    <th scope="col">Subject</th>
                    <th scope="col">Messages</th>
                    <th scope="col">Latest run</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((thread) => (
                    <tr key={thread.id}>
                      <td>
                        <IdLink id={thread.id} />
                      </td>
                      <td>
                        {thread.subject_id ? (
                          <Link href={`/memories?subject_id=${encodeURIComponent(thread.subject_id)}`}>{thread.subject_id}</Link>
                        ) : (
                          <span class="muted">—</span>
                        )}
                      </td>
                      <td>{formatCount(thread.message_count)}</td>
                      <td>
                        <IdLink id={thread.last_run_id} />
                      </td>
                      <td>{formatTime(thread.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="threads" />
            </>
          )
        }
      </Async>
    </>
  );
}
