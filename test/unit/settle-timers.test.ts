import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { awaited, MAX_TICKS, type Repeater, type Tick } from '../../src/browser/page/settle-timers.js';

/**
 * The settle probe's rule for timers (src/browser/page/settle-timers.ts), on generated timers:
 * which of them an input waits for. The same rule runs in Chromium in
 * test/integration/settle.test.ts; here every shape of history is tried.
 */
const HORIZON = 1_000;
const SINCE = 10_000;

/** Ticks at increasing times around the input, each busy or idle. */
const ticks = (from: number, to: number) =>
  fc.array(fc.record({ at: fc.integer({ min: from, max: to }), busy: fc.boolean() }), { maxLength: 6 }).map((list) => list.sort((a, b) => a.at - b.at));

const repeater = fc.record({
  kind: fc.constantFrom<'interval' | 'timeout'>('interval', 'timeout'),
  created: fc.integer({ min: 0, max: SINCE + 500 }),
  delay: fc.integer({ min: 0, max: 2_000 }),
});

const history = fc.tuple(repeater, ticks(0, SINCE - 1), ticks(SINCE, SINCE + 900)).map(([r, before, after]) => ({ ...r, ticks: [...before.filter((t) => t.at >= r.created), ...after.filter((t) => t.at >= r.created)] }) as Repeater);
const nextDue = fc.integer({ min: SINCE, max: SINCE + 2 * HORIZON });
const seenOf = (r: Repeater) => fc.integer({ min: SINCE, max: SINCE + 50 }).map((seen) => ({ r, seen }));

const before = (r: Repeater) => r.ticks.filter((t) => t.at < SINCE);
const after = (r: Repeater, seen: number) => r.ticks.filter((t) => t.at >= seen);
const clock = (list: Tick[]) => list.length >= 2 && list.slice(-2).every((t) => t.busy);

describe('which timers an input waits for', () => {
  it('never a tick due past the horizon', () => {
    fc.assert(fc.property(history.chain(seenOf), fc.integer({ min: SINCE + HORIZON + 1, max: SINCE + 5 * HORIZON }), ({ r, seen }, due) => {
      expect(awaited(r, due, SINCE, seen, HORIZON)).toBe(false);
    }));
  });

  it(`never after ${MAX_TICKS} ticks since the input reached the page`, () => {
    fc.assert(fc.property(history.chain(seenOf), nextDue, ({ r, seen }, due) => {
      fc.pre(after(r, seen).length >= MAX_TICKS);
      expect(awaited(r, due, SINCE, seen, HORIZON)).toBe(false);
    }));
  });

  it('never a clock: a timer there before the input, busy on its last two ticks before it', () => {
    fc.assert(fc.property(history.chain(seenOf), nextDue, ({ r, seen }, due) => {
      fc.pre(r.created < SINCE && clock(before(r)));
      expect(awaited(r, due, SINCE, seen, HORIZON)).toBe(false);
    }));
  });

  it('never a timeout set before the input that no earlier tick of its chain shows', () => {
    fc.assert(fc.property(history.chain(seenOf), nextDue, ({ r, seen }, due) => {
      fc.pre(r.kind === 'timeout' && r.created < SINCE && before(r).length === 0);
      expect(awaited(r, due, SINCE, seen, HORIZON)).toBe(false);
    }));
  });

  it('always a timer the input started, due within the horizon, until its third tick', () => {
    fc.assert(fc.property(history.chain(seenOf), fc.integer({ min: SINCE, max: SINCE + HORIZON }), ({ r, seen }, due) => {
      fc.pre(r.created >= SINCE && after(r, seen).length < MAX_TICKS);
      expect(awaited(r, due, SINCE, seen, HORIZON)).toBe(true);
    }));
  });

  it("a poll (there before, not a clock): its next tick after the input reached the page, and the next while each did something", () => {
    fc.assert(fc.property(history.chain(seenOf), fc.integer({ min: SINCE, max: SINCE + HORIZON }), ({ r, seen }, due) => {
      fc.pre(r.created < SINCE && !clock(before(r)) && (r.kind === 'interval' || before(r).length > 0));
      const later = after(r, seen);
      fc.pre(later.length < MAX_TICKS);
      const lookedAndIdle = later.length > 0 && !later[later.length - 1]!.busy;
      expect(awaited(r, due, SINCE, seen, HORIZON)).toBe(!lookedAndIdle);
    }));
  });

  it('a tick between the input and its arrival in the page has not looked yet', () => {
    const poll: Repeater = { kind: 'interval', created: 0, delay: 300, ticks: [{ at: SINCE - 300, busy: false }, { at: SINCE + 5, busy: false }] };
    // The keys reached the page at SINCE + 20: the idle tick at SINCE + 5 could not see them.
    expect(awaited(poll, SINCE + 305, SINCE, SINCE + 20, HORIZON)).toBe(true);
    // Had they arrived before it, that tick looked and found nothing to do.
    expect(awaited(poll, SINCE + 305, SINCE, SINCE + 2, HORIZON)).toBe(false);
  });
});
