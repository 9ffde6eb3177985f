/** Schedules: the project's list, each with its next time and its latest run's status, paused and resumed here. */
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { Pager, useCursor } from '../components/admin-pager';
import { StatusBadge } from '../components/runs-bars';
import { Async, EmptyState } from '../components/states';
import { formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

type Schedule = Schemas['Schedule'];

/** When it runs, as the schedule was given it. */
function timing(schedule: Schedule): string {
  if (schedule.cron !== null) return `${schedule.cron} (${schedule.timezone})`;
  return `every ${schedule.interval_seconds} s`;
}

function LastRun({ schedule }: { schedule: Schedule }) {
  const [last] = schedule.recent_runs;
  if (schedule.last_error) return <span title={schedule.last_error.message}>no run: {schedule.last_error.code}</span>;
  if (!last) return <span class="muted">none yet</span>;
  return (
    <Link href={`/runs/${encodeURIComponent(last.run_id)}`}>
      <StatusBadge status={last.status} /> {formatTime(last.scheduled_at)}
    </Link>
  );
}

export default function SchedulesView() {
  const cursor = useCursor();
  const schedules = useApi(
    (signal) => api.GET('/v1/schedules', { params: { query: { limit: 20, ...cursor } }, signal }).then(unwrap),
    [cursor.after, cursor.before],
  );
  const [error, setError] = useState<string>();

  async function setPaused(schedule: Schedule, paused: boolean) {
    setError(undefined);
    try {
      unwrap(await api.PATCH('/v1/schedules/{id}', { params: { path: { id: schedule.id } }, body: { paused } }));
      schedules.reload();
    } catch (failure) {
      setError((failure as Error).message);
    }
  }

  return (
    <>
      <h1>Schedules</h1>
      <p class="muted">Agents and networks that run by themselves, at cron times or every so many seconds.</p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <Async loaded={schedules} what="schedules">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <EmptyState
              title="No schedules yet"
              method="POST"
              path="/v1/schedules"
              body={{ agent_id: 'agent_…', cron: '0 9 * * 1-5', timezone: 'Europe/Paris', run: { input: 'Summarise yesterday.' } }}
            >
              <p>Create one with the API:</p>
            </EmptyState>
          ) : (
            <>
              <table class="listing">
                <caption>Schedules</caption>
                <thead>
                  <tr>
                    <th scope="col">Schedule</th>
                    <th scope="col">Runs</th>
                    <th scope="col">When</th>
                    <th scope="col">Next run</th>
                    <th scope="col">Last run</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((schedule) => (
                    <tr key={schedule.id}>
                      <th scope="row">
                        {schedule.name ?? schedule.id}
                        {schedule.name && <div class="muted">{schedule.id}</div>}
                      </th>
                      <td>
                        {schedule.agent_id ? (
                          <Link href={`/agents/${encodeURIComponent(schedule.agent_id)}`}>{schedule.agent_id}</Link>
                        ) : (
                          <Link href={`/networks/${encodeURIComponent(schedule.network_id!)}`}>{schedule.network_id}</Link>
                        )}
                      </td>
                      <td>{timing(schedule)}</td>
                      <td>{schedule.paused ? <span class="muted">paused</span> : formatTime(schedule.next_run_times[0])}</td>
                      <td>
                        <LastRun schedule={schedule} />
                      </td>
                      <td>
                        {!schedule.managed_resource && (
                          <button type="button" class="plain" onClick={() => void setPaused(schedule, !schedule.paused)}>
                            {schedule.paused ? 'Resume' : 'Pause'}
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="schedules" />
            </>
          )
        }
      </Async>
    </>
  );
}
