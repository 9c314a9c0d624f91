import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEventLog } from '../../src/telemetry/event-log.js';
import { createEventStream } from '../../src/telemetry/event-stream.js';
import type { ExecutionEvent, ExecutionEvents, TimelineMark } from '../../src/telemetry/execution-events.js';
import { tempDir } from '../support/env.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A stream with a clock the test moves and a redaction that hides one secret. */
function stream(onError?: (error: unknown, type: string) => void) {
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  const events = createEventStream({
    executionId: 'exec-1',
    redact: <T>(value: T): T => JSON.parse(JSON.stringify(value).replaceAll('hunter2', '{{password}}')) as T,
    now: () => clock,
    ...(onError ? { onError } : {}),
  });
  return { events, tick: (ms: number) => (clock += ms) };
}

describe('the execution event stream', () => {
  it('hands each subscriber of a type its typed fields, redacted, and every-event subscribers every event with its line', () => {
    const { events, tick } = stream();
    const actions: Array<ExecutionEvents['action']> = [];
    const all: ExecutionEvent[] = [];
    events.on('action', (fields) => actions.push(fields));
    events.onAny((event) => all.push(event));
    tick(500);
    events.setOrigin(Date.parse('2026-01-01T00:00:00.400Z'));
    events.emit('action', { step: 2, by: 'model', tool: 'computer', action: 'type', input: { text: 'hunter2' }, ok: true, label: 'type "hunter2"' });
    events.emit('finish', { status: 'completed' }, Date.parse('2026-01-01T00:00:00.450Z'));

    expect(actions).toEqual([{ step: 2, by: 'model', tool: 'computer', action: 'type', input: { text: '{{password}}' }, ok: true, label: 'type "{{password}}"' }]);
    expect(all.map((e) => e.type)).toEqual(['action', 'finish']);
    expect(all[0]!.line).toEqual({ ts: '2026-01-01T00:00:00.500Z', t: 100, type: 'action', executionId: 'exec-1', ...actions[0] });
    // An event dated when it began is on the timeline there.
    expect(all[1]!.line).toMatchObject({ ts: '2026-01-01T00:00:00.450Z', t: 50, type: 'finish', status: 'completed' });
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

  it('gives timeline marks to their subscribers only, labels redacted', () => {
    const { events } = stream();
    const marks: TimelineMark[] = [];
    const any: string[] = [];
    events.onAny((e) => any.push(e.type));
    const off = events.onMark((mark) => marks.push(mark));
    events.mark({ atMs: 5, label: 'type "hunter2"', point: { x: 1, y: 2 } });
    off();
    events.mark({ atMs: 6, label: 'click' });
    expect(marks).toEqual([{ atMs: 5, label: 'type "{{password}}"', point: { x: 1, y: 2 } }]);
    expect(any).toEqual([]);
  });

  it('writes each line of a subscribed event log as one JSON line, and none after close', async () => {
    const dir = await tempDir('event-stream');
    dirs.push(dir);
    const { events } = stream();
    const log = createEventLog(path.join(dir, 'logs.jsonl'));
    events.onAny(({ line }) => log.write(line));
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
