import { describe, expect, it } from 'vitest';
import type { HumanDesk } from '../../src/human/types.js';
import { createHumanGate } from '../../src/runner/human-gate.js';
import { silentLogger } from '../contract/local-api-harness.js';
import { createFakeSession } from '../support/fake-session.js';
import { heardEvents } from '../support/heard-events.js';
import type { HumanRequest } from '../../src/execution/human.js';
import type { HumanAnswer } from '../../src/contract/human.js';

/**
 * The run's waiting budget (docs/human-in-the-loop.md#timeouts), on a clock the test moves: every
 * ask draws on one `humanTimeoutMs`, `timeoutAt` says what is left, and a run whose budget is
 * spent is not told to wait again. The desk here is in memory; the Redis one is tested in
 * test/integration/human-desk.test.ts.
 */

const question: HumanRequest = { kind: 'question', question: 'Which address?', choices: null };

/** A desk whose waits take the time the script says, answering or not. */
function scriptedDesk(script: Array<{ waitMs: number; answer?: Partial<HumanAnswer> }>, clock: { ms: number }) {
  const waits: number[] = [];
  const desk: HumanDesk = {
    mark: async () => '0-0',
    async wait({ timeoutMs }) {
      waits.push(timeoutMs);
      const step = script.shift()!;
      if (!step.answer || step.waitMs >= timeoutMs) {
        clock.ms += timeoutMs;
        return undefined;
      }
      clock.ms += step.waitMs;
      return { answer: 'the office', decision: null, by: 'alice', ...step.answer, id: `${clock.ms}-0` };
    },
    release: async () => undefined,
    close: async () => undefined,
  };
  return { desk, waits };
}

function setup(timeoutMs: number, script: Parameters<typeof scriptedDesk>[0]) {
  const clock = { ms: Date.parse('2026-11-03T09:00:00.000Z') };
  const { desk, waits } = scriptedDesk(script, clock);
  const { events: sink, lines: events } = heardEvents();
  const paused: string[] = [];
  const gate = createHumanGate({
    executionId: 'e1',
    desk,
    session: createFakeSession(),
    events: sink,
    logger: silentLogger,
    timeoutMs,
    pauseDeadline: () => {
      paused.push('pause');
      return () => paused.push('resume');
    },
    redact: (t) => t,
    now: () => clock.ms,
  });
  return { gate, waits, events, paused, clock };
}

const signal = new AbortController().signal;

describe('the waiting budget of a run', () => {
  it('gives each ask what the earlier ones left, and timeoutAt says so', async () => {
    const t = setup(60_000, [{ waitMs: 40_000, answer: {} }, { waitMs: 15_000, answer: {} }, { waitMs: 999_999 }]);
    await t.gate.ask(question, signal);
    // Work between the questions does not draw on the budget.
    t.clock.ms += 3_600_000;
    await t.gate.ask(question, signal);
    await expect(t.gate.ask(question, signal)).rejects.toMatchObject({ code: 'human_timeout' });
    expect(t.waits).toEqual([60_000, 20_000, 5_000]);
    const timeouts = t.events.filter((e) => e.type === 'waiting').map((e) => e.fields.timeoutAt);
    const asked = [0, 40_000 + 3_600_000, 40_000 + 3_600_000 + 15_000].map((ms) => Date.parse('2026-11-03T09:00:00.000Z') + ms);
    expect(timeouts).toEqual([asked[0]! + 60_000, asked[1]! + 20_000, asked[2]! + 5_000].map((ms) => new Date(ms).toISOString()));
    // The run's own clock stood still through each wait, and only then.
    expect(t.paused).toEqual(['pause', 'resume', 'pause', 'resume', 'pause', 'resume']);
  });

  it('fails at once a run that asks again with its budget spent, without telling anyone it waits', async () => {
    const t = setup(10_000, [{ waitMs: 10_000 }]);
    await expect(t.gate.ask(question, signal)).rejects.toMatchObject({ code: 'human_timeout' });
    const before = t.events.length;
    await expect(t.gate.ask(question, signal)).rejects.toMatchObject({ code: 'human_timeout' });
    expect(t.waits).toHaveLength(1);
    expect(t.events.slice(before).map((e) => e.type)).toEqual(['human_timeout']);
  });

  it('reports the outcome of an approval by the one approval rule', async () => {
    const t = setup(60_000, [
      { waitMs: 1_000, answer: { answer: 'OK, no - do not pay' } },
      { waitMs: 1_000, answer: { answer: 'approve', decision: 'approve' } },
      { waitMs: 1_000, answer: { answer: ' Approve ' } },
    ]);
    const approval = { ...question, kind: 'approval' as const };
    for (let i = 0; i < 3; i++) await t.gate.ask(approval, signal);
    expect(t.events.filter((e) => e.type === 'resumed').map((e) => e.fields.outcome)).toEqual(['denied', 'approved', 'approved']);
  });
});
