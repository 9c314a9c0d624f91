import { describe, expect, it } from 'vitest';
import { parseScheduleExpression } from '../../src/local-service/schedule-expression.js';

describe('parseScheduleExpression', () => {
  it.each([
    ['0 9 * * 1-5', { pattern: '0 9 * * 1-5', tz: 'UTC' }],
    ['  TZ=Europe/Paris   30 7 * * *  ', { pattern: '30 7 * * *', tz: 'Europe/Paris' }],
    ['CRON_TZ=America/New_York 0 0 1 * *', { pattern: '0 0 1 * *', tz: 'America/New_York' }],
    ['15 0 9 * * *', { pattern: '15 0 9 * * *', tz: 'UTC' }],
    ['@hourly', { pattern: '@hourly', tz: 'UTC' }],
  ])('reads %j', (expression, schedule) => {
    expect(parseScheduleExpression(expression)).toEqual({ ok: true, schedule });
  });

  it('holds the floor of once a minute by the seconds field, exactly', () => {
    expect(parseScheduleExpression('0,30 * * * * *')).toMatchObject({ ok: false, type: 'schedule_too_frequent', msg: expect.stringContaining('2 times a minute') });
    expect(parseScheduleExpression('59 * * * * *')).toMatchObject({ ok: true });
    expect(parseScheduleExpression('* * * * *')).toMatchObject({ ok: true });
    expect(parseScheduleExpression('@secondly')).toMatchObject({ ok: false, type: 'schedule_too_frequent' });
    // The test-only override lets every second through.
    expect(parseScheduleExpression('* * * * * *', { allowEverySecond: true })).toEqual({ ok: true, schedule: { pattern: '* * * * * *', tz: 'UTC' } });
  });

  it.each([
    ['', 'schedule_invalid', /empty/],
    ['TZ=UTC', 'schedule_invalid', /fields/],
    ['* * * *', 'schedule_invalid', /has 4/],
    ['* * * * * * *', 'schedule_invalid', /has 7/],
    ['0 25 * * *', 'schedule_invalid', /25/],
    ['0 0 31 2 *', 'schedule_invalid', /cron/],
    ['TZ=Nowhere/Land 0 9 * * *', 'schedule_time_zone', /Nowhere\/Land/],
  ])('refuses %j', (expression, type, msg) => {
    const result = parseScheduleExpression(expression);
    expect(result).toMatchObject({ ok: false, type });
    expect(result.ok ? '' : result.msg).toMatch(msg);
  });
});
