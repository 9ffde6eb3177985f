import assert from 'node:assert/strict';
import { cronProblem, nextTimes, temporalCron, timezoneNamed } from '../../records/schedule-times.js';
import { scheduledTimeOf } from '../../workflows/schedules/ids.js';

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('schedule times', () => {
  it('takes five-field cron expressions of numbers, names, ranges, lists and steps, and refuses what Temporal would', () => {
    for (const cron of ['* * * * *', '0 9 * * 1-5', '*/15 0-6,18-23 * jan-mar mon', '0 0 1 1 *', '5,35 */2 1-15/2 * sun', '0 0 29 2 *'])
      assert.equal(cronProblem(cron), null, cron);
    for (const cron of ['0 9 * *', '0 0 9 * * *', '0 9 L * *', '0 9 ? * 1', '0 9 * * 1#2', '61 * * * *', '0 25 * * *', '@daily', ''])
      assert.notEqual(cronProblem(cron), null, cron);
  });

  it('refuses a date no month has, which would never run, and takes one that comes only in leap years', () => {
    for (const cron of ['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 0 30,31 feb *'])
      assert.equal(cronProblem(cron), 'it names no day that exists (such as 30 February), so it would never run.', cron);
    // 29 February on a Monday: 2044 is the next.
    assert.equal(cronProblem('0 0 29 2 mon'), null);
    assert.equal(
      nextTimes({ cron: '0 0 29 2 mon', timezone: 'UTC' }, 1, new Date('2026-01-01T00:00:00Z'))[0]?.toISOString(),
      '2044-02-29T00:00:00.000Z',
    );
  });

  it('knows IANA time zone names and nothing else, and spells each as the database does, which Temporal needs', () => {
    for (const timezone of [
      'UTC',
      'Europe/Paris',
      'America/Argentina/Buenos_Aires',
      'Etc/GMT+5',
      'Asia/Kolkata',
      'Asia/Calcutta',
      'EST5EDT',
    ])
      assert.equal(timezoneNamed(timezone), timezone);
    const spelt: [string, string][] = [
      ['utc', 'UTC'],
      ['europe/london', 'Europe/London'],
      ['AMERICA/SAO_PAULO', 'America/Sao_Paulo'],
      ['asia/kathmandu', 'Asia/Kathmandu'],
      ['us/eastern', 'US/Eastern'],
      ['america/port-au-prince', 'America/Port-au-Prince'],
    ];
    for (const [given, name] of spelt) assert.equal(timezoneNamed(given), name, given);
    for (const timezone of [
      'Mars/Olympus',
      'Europe/',
      '../etc/passwd',
      'x'.repeat(80),
      '',
      'Etc/GMT+14',
      'Factory',
      'posixrules',
      '+05:30',
    ])
      assert.equal(timezoneNamed(timezone), null, timezone);
  });

  it('gives Temporal the days of the week as a list, so that it reads each range as the cron convention does', () => {
    const days = (cron: string) => nextTimes({ cron, timezone: 'UTC' }, 7, new Date('2026-01-05T01:00:00Z')).map((at) => at.getUTCDay());
    // Temporal refuses `mon-sun` (Sunday is its day 0) and reads `1-7` without Sunday; both are every day.
    assert.equal(temporalCron('0 9 * * MON-SUN'), '0 9 * * 0,1,2,3,4,5,6');
    assert.equal(temporalCron('0 9 * * 1-7'), '0 9 * * 0,1,2,3,4,5,6');
    assert.equal(temporalCron(' 0 9  * jan-mar fri-sun/2,tue '), '0 9 * jan-mar 0,2,5');
    assert.equal(temporalCron('0 9 * * */2'), '0 9 * * 0,2,4,6');
    assert.equal(temporalCron('0 9 * * sun-sun'), '0 9 * * 0');
    assert.equal(temporalCron('0 9 * * 7'), '0 9 * * 0');
    assert.equal(temporalCron('0 9 * * *'), '0 9 * * *');
    // Fields this does not read are left for cronProblem to name.
    for (const cron of ['0 9 * * 5-1', '0 9 * * 1/2', '0 9 * * 8', '0 9 * * L']) assert.equal(temporalCron(cron), cron);
    assert.notEqual(cronProblem('0 9 * * 5-1'), null);
    assert.deepEqual(days('0 9 * * mon-sun'), [1, 2, 3, 4, 5, 6, 0]);
    assert.deepEqual(days('0 9 * * 1-7'), [1, 2, 3, 4, 5, 6, 0]);
    assert.deepEqual(days('0 9 * * fri-sun'), [5, 6, 0, 5, 6, 0, 5]);
    assert.deepEqual(days('0 9 * * sun-sun'), [0, 0, 0, 0, 0, 0, 0]);
  });

  it('reads cron times in the time zone, across a change of daylight saving time', () => {
    // Paris went from UTC+1 to UTC+2 on 29 March 2026.
    const times = nextTimes({ cron: '0 9 * * *', timezone: 'Europe/Paris' }, 3, new Date('2026-03-27T12:00:00Z'));
    assert.deepEqual(iso(times), ['2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z', '2026-03-30T07:00:00.000Z']);
  });

  it('matches a day only when both the day of month and the day of week match, as Temporal does', () => {
    // Friday the 13th.
    const [next] = nextTimes({ cron: '0 0 13 * fri', timezone: 'UTC' }, 1, new Date('2026-01-01T00:00:00Z'));
    assert.equal(next!.toISOString(), '2026-02-13T00:00:00.000Z');
  });

  it('counts intervals from the Unix epoch', () => {
    const times = nextTimes({ intervalSeconds: 3600 }, 2, new Date('2026-05-01T10:20:00Z'));
    assert.deepEqual(iso(times), ['2026-05-01T11:00:00.000Z', '2026-05-01T12:00:00.000Z']);
  });

  it('reads the scheduled time from the workflow id the Temporal Schedule gives each time', () => {
    assert.equal(scheduledTimeOf('scheduled-run-sched_a-2026-05-01T11:00:00Z', 'sched_a'), '2026-05-01T11:00:00.000Z');
    assert.equal(scheduledTimeOf('scheduled-run-sched_b-2026-05-01T11:00:00Z', 'sched_a'), null);
    assert.equal(scheduledTimeOf('scheduled-run-sched_a-soon', 'sched_a'), null);
  });
});
