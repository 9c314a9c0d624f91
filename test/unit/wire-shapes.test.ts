import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { logLine } from '../../src/contract/log-line.js';
import { finalFields } from '../../src/contract/reports.js';
import { scheduleTick, tickResult } from '../../src/contract/schedule-tick.js';
import { spoolEntry } from '../../src/contract/spool.js';
import { storageState } from '../../src/contract/storage-state.js';
import { parseLiveMessage } from '../../src/domain/live-protocol.js';
import { createExecutionEvents, type ExecutionLine } from '../../src/execution/events.js';
import { readTick } from '../../src/local-service/schedules.js';
import { readSpoolEntry } from '../../src/storage/spool.js';

/**
 * The shapes one process writes and another reads back (docs/architecture.md#wire-shapes): a
 * spool entry, a schedule tick, a logs.jsonl line, a final report's counters, a profile's browser
 * state. Each is refused when it is not of its shape, saying where, and each the writer makes is
 * one its reader takes.
 */

const SPOOL = { executionId: 'e1', name: 'steps/001.jpg', contentType: 'image/jpeg', file: '/work/spool/e1/steps/001.jpg' };
const TICK = { workflowId: 'w1', workflowVersionId: 'v1' };

/** A copy of `value` with one of its fields dropped, or replaced by a value of another JSON type. */
function spoilt(value: Record<string, unknown>) {
  const keys = Object.keys(value);
  return fc.record({
    key: fc.constantFrom(...keys),
    change: fc.oneof(fc.constant({ drop: true as const }), fc.record({ to: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.string(), fc.array(fc.string(), { maxLength: 2 })) })),
  }).filter(({ key, change }) => 'drop' in change || typeof change.to !== typeof value[key]).map(({ key, change }) => {
    const copy: Record<string, unknown> = { ...value };
    if ('drop' in change) delete copy[key];
    else copy[key] = change.to;
    return { key, copy };
  });
}

describe('a spool entry read back', () => {
  it('is the entry written', () => {
    expect(readSpoolEntry(JSON.stringify(SPOOL))).toEqual(SPOOL);
  });

  it('is refused, naming the field, when a field is missing or of another type', () => {
    fc.assert(
      fc.property(spoilt(SPOOL), ({ key, copy }) => {
        expect(() => readSpoolEntry(JSON.stringify(copy))).toThrow(new RegExp(`^not a spool entry: .*${key}`));
      }),
    );
  });

  it('is refused when a field is empty', () => {
    for (const key of Object.keys(SPOOL)) expect(() => readSpoolEntry(JSON.stringify({ ...SPOOL, [key]: '' }))).toThrow(new RegExp(`^not a spool entry: ${key}: `));
  });

  it('is refused when it is not an object', () => {
    for (const text of ['null', '[]', '"e1"', '3']) expect(() => readSpoolEntry(text)).toThrow(/^not a spool entry: \(root\)/);
    expect(spoolEntry.safeParse(SPOOL).success).toBe(true);
  });
});

describe('a schedule tick', () => {
  it('reads the data its scheduler was given', () => {
    expect(readTick(TICK)).toEqual(TICK);
    expect(tickResult.parse({ executionId: 'x' })).toEqual({ executionId: 'x' });
    expect(tickResult.safeParse({ made: 'x' }).success).toBe(false);
  });

  it('of another shape fails, naming the field', () => {
    fc.assert(
      fc.property(spoilt(TICK), ({ key, copy }) => {
        expect(scheduleTick.safeParse(copy).success).toBe(false);
        expect(() => readTick(copy)).toThrow(new RegExp(`^not a schedule tick: ${key}: `));
      }),
    );
    expect(() => readTick(undefined)).toThrow(/^not a schedule tick: \(root\)/);
  });
});

describe('a logs.jsonl line', () => {
  it('is what the event stream writes, for any fields of any logged event', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.string(), fc.integer({ min: -5_000, max: 5_000 }), (step, text, shift) => {
        const lines: ExecutionLine[] = [];
        let clock = Date.parse('2026-01-01T00:00:00.000Z');
        const events = createExecutionEvents({ executionId: 'exec-1', redact: (v) => v, now: () => clock });
        events.onLine((line) => lines.push(line));
        events.setOrigin(clock + shift);
        events.emit('action', { step, by: 'model', tool: 'computer', action: 'type', input: { text }, ok: true, label: text });
        clock += 10;
        events.emit('finish', { status: 'completed' });
        for (const line of lines) expect(logLine.parse(JSON.parse(JSON.stringify(line)))).toEqual(line);
      }),
    );
  });

  it('without its common fields is refused, and so is the live message that carries it', () => {
    const line = { ts: '2026-01-01T00:00:00.000Z', t: 12, type: 'action', executionId: 'exec-1', step: 1 };
    expect(parseLiveMessage(JSON.stringify({ kind: 'events', events: [{ seq: 1, line }] }))).toEqual({ kind: 'events', events: [{ seq: 1, line }] });
    fc.assert(
      fc.property(spoilt({ ts: line.ts, t: line.t, type: line.type, executionId: line.executionId }), ({ key, copy }) => {
        const read = logLine.safeParse({ ...copy, step: 1 });
        expect(read.success).toBe(false);
        expect(read.error?.issues.map((i) => i.path.join('.'))).toContain(key);
        expect(parseLiveMessage(JSON.stringify({ kind: 'events', events: [{ seq: 1, line: { ...copy, step: 1 } }] }))).toBeUndefined();
      }),
    );
    expect(logLine.safeParse({ ...line, type: 'Not An Event' }).error?.issues[0]?.message).toMatch(/snake_case/);
  });
});

describe("a final report's counters", () => {
  it('are whole numbers, 0 or more, and urls or null', () => {
    const fields = { durationMs: 10, nSteps: 1, nAgentActions: 2, nScreenshots: 3, outputUrl: 'http://x/o.json', videoUrl: null, logsUrl: null };
    expect(finalFields.parse(fields)).toEqual(fields);
    fc.assert(
      fc.property(fc.constantFrom('durationMs', 'nSteps', 'nAgentActions', 'nScreenshots'), fc.oneof(fc.integer({ max: -1 }), fc.double({ min: 0.1, max: 1e6, noInteger: true }), fc.constant('3')), (key, bad) => {
        const read = finalFields.safeParse({ ...fields, [key]: bad });
        expect(read.success).toBe(false);
        expect(read.error?.issues[0]?.path).toEqual([key]);
      }),
    );
  });
});

describe("a profile's browser state", () => {
  it('keeps what a newer browser adds to a cookie, and refuses a cookie without its fields', () => {
    const cookie = { name: 'sid', value: 's', domain: 'a.test', path: '/', expires: -1, httpOnly: true, secure: true, sameSite: 'Lax', partitionKey: 'p' };
    expect(storageState.parse({ cookies: [cookie], origins: [] }).cookies[0]).toEqual(cookie);
    fc.assert(
      fc.property(spoilt(cookie).filter(({ key }) => key !== 'partitionKey'), ({ key, copy }) => {
        const read = storageState.safeParse({ cookies: [copy], origins: [] });
        expect(read.success).toBe(false);
        expect(read.error?.issues[0]?.path).toEqual(['cookies', 0, key]);
      }),
    );
  });
});
