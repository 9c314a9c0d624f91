import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEventLog } from '../../src/telemetry/event-log.js';
import { createExecutionEvents, type ExecutionEvents, type ExecutionLine } from '../../src/execution/events.js';
import { tempDir } from '../support/env.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A stream with a clock the test moves and a redaction that hides one secret (and counts its calls). */
function stream(onError?: (error: unknown, type: string) => void) {
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  const redacted: unknown[] = [];
  const events = createExecutionEvents({
    executionId: 'exec-1',
    redact: <T>(value: T): T => {
      redacted.push(value);
      return JSON.parse(JSON.stringify(value).replaceAll('hunter2', '{{password}}')) as T;
    },
    now: () => clock,
    ...(onError ? { onError } : {}),
  });
  return { events, redacted, tick: (ms: number) => (clock += ms) };
}

describe('the execution event stream', () => {
  it('hands each subscriber of a type its typed fields, redacted, and line subscribers every line', () => {
    const { events, tick } = stream();
    const actions: Array<ExecutionEvents['action']> = [];
    const dated: number[] = [];
    const lines: ExecutionLine[] = [];
    events.on('action', (fields, { atMs }) => {
      actions.push(fields);
      dated.push(atMs);
    });
    events.onLine((line) => lines.push(line));
    tick(500);
    events.setOrigin(Date.parse('2026-01-01T00:00:00.400Z'));
    events.emit('action', { step: 2, by: 'model', tool: 'computer', action: 'type', input: { text: 'hunter2' }, ok: true, label: 'type "hunter2"' });
    events.emit('finish', { status: 'completed' }, Date.parse('2026-01-01T00:00:00.450Z'));

    expect(actions).toEqual([{ step: 2, by: 'model', tool: 'computer', action: 'type', input: { text: '{{password}}' }, ok: true, label: 'type "{{password}}"' }]);
    expect(dated).toEqual([Date.parse('2026-01-01T00:00:00.500Z')]);
    expect(lines.map((l) => l.type)).toEqual(['action', 'finish']);
    expect(lines[0]).toEqual({ ts: '2026-01-01T00:00:00.500Z', t: 100, type: 'action', executionId: 'exec-1', ...actions[0] });
    // An event dated when it began is on the timeline there.
    expect(lines[1]).toMatchObject({ ts: '2026-01-01T00:00:00.450Z', t: 50, type: 'finish', status: 'completed' });
  });

  it('stops delivering after unsubscribe, and keeps delivering to the others when one subscriber throws', () => {
    const failures: string[] = [];
    const { events } = stream((_error, type) => failures.push(type));
    const seen: number[] = [];
    const off = events.on('replayed_step', ({ step }) => seen.push(step));
    events.on('replayed_step', () => {
      throw new Error('a broken observer');
    });
    events.on('replayed_step', ({ step }) => seen.push(step * 10));
    events.emit('replayed_step', { step: 1, by: 'cache', actions: 1 });
    off();
    events.emit('replayed_step', { step: 2, by: 'cache', actions: 1 });
    expect(seen).toEqual([1, 10, 20]);
    expect(failures).toEqual(['replayed_step', 'replayed_step']);
  });

  it('gives internal events to their subscribers only, redacted and dated, never as a line', () => {
    const { events, redacted } = stream();
    const marks: Array<{ label: string; point?: { x: number; y: number }; atMs: number }> = [];
    const traces: Array<ExecutionEvents['action_trace']> = [];
    const lines: string[] = [];
    events.onLine((line) => lines.push(line.type));
    expect(events.hasSubscribers('timeline_mark')).toBe(false);
    // Nobody hears it: nothing is done, not even its redaction.
    events.notify('timeline_mark', { label: 'unheard' }, 1);
    expect(redacted).toEqual([]);

    const off = events.on('timeline_mark', ({ label, point }, { atMs }) => marks.push({ label, ...(point ? { point } : {}), atMs }));
    events.on('action_trace', (fields) => traces.push(fields));
    expect(events.hasSubscribers('timeline_mark')).toBe(true);
    events.notify('timeline_mark', { label: 'type "hunter2"', point: { x: 1, y: 2 } }, 5);
    events.notify('action_trace', { step: 1, trace: { tool: 'computer', input: { text: 'hunter2' }, url: 'https://shop.test/' } });
    off();
    expect(events.hasSubscribers('timeline_mark')).toBe(false);
    events.notify('timeline_mark', { label: 'click' }, 6);

    expect(marks).toEqual([{ label: 'type "{{password}}"', point: { x: 1, y: 2 }, atMs: 5 }]);
    expect(traces).toEqual([{ step: 1, trace: { tool: 'computer', input: { text: '{{password}}' }, url: 'https://shop.test/' } }]);
    expect(lines).toEqual([]);
  });

  it('takes a line only by emit and an internal event only by notify (a type error otherwise)', () => {
    const { events } = stream();
    const lines: string[] = [];
    events.onLine((line) => lines.push(line.type));
    const never = (): void => {
      // @ts-expect-error an internal event is never a line
      events.emit('timeline_mark', { label: 'click' });
      // @ts-expect-error a line is emitted, not notified
      events.notify('finish', { status: 'completed' });
      // @ts-expect-error a field the map does not have
      events.emit('finish', { status: 'completed', extra: 1 });
    };
    void never;
    events.emit('profile_stale', { id: 'p' });
    expect(lines).toEqual(['profile_stale']);
  });

  it('writes each line of a subscribed event log as one JSON line, and none after close', async () => {
    const dir = await tempDir('event-stream');
    dirs.push(dir);
    const { events } = stream();
    const log = createEventLog(path.join(dir, 'logs.jsonl'));
    events.onLine((line) => log.write(line));
    events.emit('navigation', { url: 'https://shop.test/', ok: true, by: 'worker' });
    events.emit('output_invalid', { errors: 'hunter2 is not a number' });
    await log.close();
    await log.close();
    events.emit('profile_stale', { id: 'p' });
    const lines = (await readFile(log.path, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.type)).toEqual(['navigation', 'output_invalid']);
    expect(lines[1]).toMatchObject({ executionId: 'exec-1', errors: '{{password}} is not a number' });
    expect(Object.keys(lines[0]!)).toEqual(['ts', 't', 'type', 'executionId', 'url', 'ok', 'by']);
  });
});
