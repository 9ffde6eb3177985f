/** One dataset: its scorers and its items, each with its input, expected answer and the run it was taken from. */
import { Link } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async } from '../components/states';
import { formatCount, formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

const PAGE_SIZE = 50;
const SHOWN_CHARS = 280;

const shortened = (text: string) => (text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text);

/** The item's input as its last user message says it (the conversation before it is on the item itself). */
function inputText(item: Schemas['DatasetItem']): string {
  const asked = item.input.filter((message) => message.role === 'user').at(-1);
  return asked ? asked.content : '';
}

function expectedText(expected: unknown): string | null {
  if (expected === null || expected === undefined) return null;
  return typeof expected === 'string' ? expected : JSON.stringify(expected);
}

export default function DatasetView({ params }: { params: { id: string } }) {
  const dataset = useApi(
    (signal) => api.GET('/v1/datasets/{id}', { params: { path: { id: params.id } }, signal }).then(unwrap),
    [params.id],
  );
  return (
    <>
      <p>
        <Link href="/datasets">← Datasets</Link>
      </p>
      <Async loaded={dataset} what="the dataset">
        {(data) => <Dataset dataset={data} />}
      </Async>
    </>
  );
}

function Dataset({ dataset }: { dataset: Schemas['Dataset'] }) {
  const cursor = useCursor();
  const items = useApi(
    (signal) =>
      api
        .GET('/v1/datasets/{id}/items', { params: { path: { id: dataset.id }, query: { limit: PAGE_SIZE, ...cursor } }, signal })
        .then(unwrap),
    [dataset.id, cursor.after, cursor.before],
  );

  return (
    <>
      <h1>{dataset.name}</h1>
      {dataset.description && <p>{dataset.description}</p>}
      <dl class="facts">
        <dt>Dataset</dt>
        <dd>
          <code class="id">{dataset.id}</code>
        </dd>
        <dt>Items</dt>
        <dd>{formatCount(dataset.item_count)}</dd>
        <dt>Scorers</dt>
        <dd>{dataset.scorers.map((scorer) => scorer.name).join(', ') || <span class="muted">none</span>}</dd>
        <dt>Created</dt>
        <dd>{formatTime(dataset.created_at)}</dd>
      </dl>
      <p>
        <Link href={`/experiments?dataset_id=${encodeURIComponent(dataset.id)}`}>Experiments on this dataset</Link>
      </p>
      <h2>Items</h2>
      <Async loaded={items} what="the items">
        {(page) =>
          page.data.length === 0 ? (
            <p class="muted">No items yet.</p>
          ) : (
            <>
              <table class="listing">
                <thead>
                  <tr>
                    <th scope="col">Input</th>
                    <th scope="col">Expected</th>
                    <th scope="col">Source run</th>
                    <th scope="col">Tool calls</th>
                    <th scope="col">Added</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((item) => {
                    const expected = expectedText(item.expected);
                    return (
                      <tr key={item.id}>
                        <td>{shortened(inputText(item))}</td>
                        <td>{expected === null ? <span class="muted">—</span> : shortened(expected)}</td>
                        <td>
                          <IdLink id={item.source_run_id} />
                        </td>
                        <td>{formatCount(item.tool_call_count)}</td>
                        <td>{formatTime(item.created_at)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
              <Pager page={page} what="items" />
            </>
          )
        }
      </Async>
    </>
  );
}
