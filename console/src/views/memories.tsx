/**
 * A subject's memories: each fact, whether it is current or what superseded it, and the words of each message it
 * was learned from; deleting one, and forgetting the subject altogether with the receipt of what went.
 */
import { useState } from 'preact/hooks';
import { useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { ConfirmButton } from '../components/admin-confirm';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async } from '../components/states';
import { formatCount, formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

const PAGE_SIZE = 50;

export default function MemoriesView() {
  const [search, setSearch] = useSearchParams();
  const subject = search.get('subject_id') || undefined;
  const [who, setWho] = useState(subject ?? '');
  const cursor = useCursor();
  const [receipt, setReceipt] = useState<Schemas['ForgottenSubject']>();
  const [error, setError] = useState<string>();
  const memories = useApi(
    (signal) => api.GET('/v1/memories', { params: { query: { limit: PAGE_SIZE, ...cursor, subject_id: subject } }, signal }).then(unwrap),
    [subject, cursor.after, cursor.before],
  );
  const choose = (event: Event) => {
    event.preventDefault();
    setReceipt(undefined);
    setSearch(() => (who.trim() ? new URLSearchParams({ subject_id: who.trim() }) : new URLSearchParams()));
  };
  const act = async (what: () => Promise<void>) => {
    setError(undefined);
    try {
      await what();
      memories.reload();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const forget = () =>
    act(async () => {
      setReceipt(unwrap(await api.DELETE('/v1/memories', { params: { query: { subject_id: subject! } } })));
    });
  const remove = (id: string) => act(async () => void unwrap(await api.DELETE('/v1/memories/{id}', { params: { path: { id } } })));

  return (
    <>
      <h1>Memories</h1>
      <p class="muted">
        What agents with memory learned about the people their runs are for, each fact with the words it was learned from. A memory lives
        while a thread that stated it does.
      </p>
      <form class="row" onSubmit={choose}>
        <div class="field">
          <label for="memories-subject">Subject</label>
          <input id="memories-subject" value={who} onInput={(e) => setWho(e.currentTarget.value)} maxLength={256} />
        </div>
        <button type="submit">Show</button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {receipt && (
        <section role="status" aria-label="What was forgotten">
          <h2>{receipt.id} was forgotten</h2>
          <ul>
            <li>
              {formatCount(receipt.removed.memories.current)} current and {formatCount(receipt.removed.memories.superseded)} superseded
              memories, with {formatCount(receipt.removed.memory_sources)} sources
            </li>
            <li>
              {formatCount(receipt.removed.threads)} threads, with {formatCount(receipt.removed.thread_messages.user)} user and{' '}
              {formatCount(receipt.removed.thread_messages.assistant)} assistant messages
            </li>
            <li>the conversation of {formatCount(receipt.removed.runs_cleared)} runs (their cost is kept)</li>
          </ul>
        </section>
      )}
      <Async loaded={memories} what="memories">
        {(page) =>
          page.data.length === 0 ? (
            <p class="muted">{subject ? `Nothing is remembered about ${subject}.` : 'No memories yet.'}</p>
          ) : (
            <>
              <ul class="memories">
                {page.data.map((memory) => (
                  <li key={memory.id} class={memory.status}>
                    <p>
                      <strong>{memory.statement}</strong>{' '}
                      <span class="muted">({memory.status === 'current' ? 'current' : 'superseded'})</span>
                      {!subject && <span class="muted"> · {memory.subject_id}</span>}
                    </p>
                    {memory.superseded_reason && <p class="muted">{memory.superseded_reason}</p>}
                    <ul aria-label="Sources">
                      {memory.sources.map((source) => (
                        <li key={`${source.message_id}-${source.start}`}>
                          “{source.quote}” · {formatTime(source.learned_at)} · thread <IdLink id={source.thread_id} /> · run{' '}
                          <IdLink id={source.run_id} />
                        </li>
                      ))}
                      {memory.source_count > memory.sources.length && (
                        <li class="muted">and {formatCount(memory.source_count - memory.sources.length)} earlier statements</li>
                      )}
                    </ul>
                    <ConfirmButton
                      label="Delete"
                      confirmLabel="Delete the memory"
                      question="Delete this memory?"
                      onConfirm={() => remove(memory.id)}
                    />
                  </li>
                ))}
              </ul>
              <Pager page={page} what="memories" />
            </>
          )
        }
      </Async>
      {subject && (
        <section aria-labelledby="forget-title">
          <h2 id="forget-title">Forget {subject}</h2>
          <p class="muted">
            Removes every memory of {subject}, their threads and messages, and the conversation of every run made for them. The runs stay,
            with their cost. This cannot be undone.
          </p>
          <ConfirmButton
            label="Forget subject"
            confirmLabel={`Forget ${subject}`}
            question={`Forget ${subject} for good?`}
            onConfirm={forget}
          />
        </section>
      )}
    </>
  );
}
