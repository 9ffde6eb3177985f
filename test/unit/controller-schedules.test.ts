import assert from 'node:assert/strict';
import type { Schedule } from '../../controllers/platform.js';
import { scheduleDiffers, scheduleFields, type ScheduleSpec } from '../../controllers/schedules.js';

const entry = (timezone: string): ScheduleSpec => ({ name: 'digest', cron: '0 9 * * mon-fri', timezone, run: { input: 'Go.' } });

/** The platform's schedule for an entry, as the API answers it: the time zone as the database spells it. */
const platformSchedule = (timezone: string) =>
  ({ id: 'sched_1', name: 'digest', interval_seconds: null, ...scheduleFields(entry(timezone)), timezone }) as unknown as Schedule;

describe("the controller's schedules", () => {
  it('finds no change to make in a time zone the platform spelt as the database does, and one in another time zone', () => {
    assert.equal(scheduleDiffers(platformSchedule('Europe/Paris'), scheduleFields(entry('europe/paris'))), false);
    assert.equal(scheduleDiffers(platformSchedule('US/Eastern'), scheduleFields(entry('us/EASTERN'))), false);
    assert.equal(scheduleDiffers(platformSchedule('Europe/Paris'), scheduleFields(entry('Europe/London'))), true);
  });
});
