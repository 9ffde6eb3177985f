/** The project's datasets: the cases agents are evaluated on, with their scorers and how many items each holds. */
import { api, unwrap } from '../api';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async, EmptyState } from '../components/states';
import { formatCount, formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

const PAGE_SIZE = 25;

export default function DatasetsView() {
  const cursor = useCursor();
  const datasets = useApi(
    (signal) => api.GET('/v1/datasets', { params: { query: { limit: PAGE_SIZE, ...cursor } }, signal }).then(unwrap),
    [cursor.after, cursor.before],
  );

  return (
    <>
      <h1>Datasets</h1>
      <p class="muted">The cases agents are evaluated on: inputs, expected answers, and the tool calls of the runs they were taken from.</p>
      <Async loaded={datasets} what="datasets">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <EmptyState
              title="No datasets yet"
              method="POST"
              path="/v1/datasets"
              body={{ name: 'support answers', scorers: ['exact_match'] }}
            >
              <p>Create one, then add items to it, or import an OpenAI Evals export:</p>
            </EmptyState>
          ) : (
            <>
              <table class="listing">
                <thead>
                  <tr>
                    <th scope="col">Dataset</th>
                    <th scope="col">Name</th>
                    <th scope="col">Items</th>
                    <th scope="col">Scorers</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((dataset) => (
                    <tr key={dataset.id}>
                      <td>
                        <IdLink id={dataset.id} />
                      </td>
                      <td>{dataset.name}</td>
                      <td>{formatCount(dataset.item_count)}</td>
                      <td>{dataset.scorers.map((scorer) => scorer.name).join(', ') || <span class="muted">—</span>}</td>
                      <td>{formatTime(dataset.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="datasets" />
            </>
          )
        }
      </Async>
    </>
  );
}
