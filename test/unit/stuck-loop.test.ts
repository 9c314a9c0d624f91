import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runAgent } from '../../src/agent/loop.js';
import { createRepeatWatch, SAME_TARGET_PX, STUCK_STOP_AT, STUCK_WARN_AT } from '../../src/agent/stuck-loop.js';
import type { BrowserSession, BrowserTab } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import type { ToolResultBlock } from '../../src/model/types.js';
import { createComputerTool } from '../../src/toolset/computer-tool.js';
import { createDisplayGeometry } from '../../src/toolset/display.js';
import { createFakeSession } from '../support/fake-session.js';
import { heardEvents } from '../support/heard-events.js';
import { computer, finish, scriptedModel, type Turn } from '../support/scripted-model.js';
import { countEvents } from '../../src/execution/counters.js';
import type { ToolUseBlock } from '../../src/contract/recording.js';

/**
 * Stuck loops (docs/action-spaces.md#stuck-loops) in the loop, on a fake browser whose page
 * digest the test moves: the third identical action on an unchanged page is answered as an
 * error, the fifth ends the run with agent_stuck; waits and reads between them change nothing;
 * a page that changes under each click is never stuck.
 */

/** A fake session whose one tab reads the digest the test sets (`page.changes()` moves it). */
function sessionWithPage() {
  const session = createFakeSession();
  const page = { digest: 0, reads: 0, changes: () => void page.digest++ };
  const tab = { id: 'tab_1', contentDigest: async () => (page.reads++, `page-${page.digest}`) } as unknown as BrowserTab;
  return { session: { ...session, tab: () => tab } as BrowserSession, page, calls: session.calls };
}

function setup(turns: Turn[], onClick: () => void = () => undefined) {
  const { session, page } = sessionWithPage();
  // The page's reaction to a click is the test's (a counter moves, a dead button does nothing).
  const clicking: BrowserSession = { ...session, click: async (...args) => (await session.click(...args), onClick()) };
  const model = scriptedModel(turns);
  const { events, lines } = heardEvents();
  const stats = countEvents(events);
  const vault = createSecretVault(null, undefined);
  const space = createComputerTool({ session: clicking, secrets: vault, allowJavascript: false, geometry: createDisplayGeometry(session.viewport), version: 'computer_20251124', beta: 'computer-use-2025-11-24', zoom: true });
  const run = () =>
    runAgent({ model, space, session: clicking, events }, { spec: { prompt: 'Order', allowedDomains: ['shop.test'] }, modelId: 'claude-opus-4-7', vault, maxSteps: 20, startUrl: 'http://shop.test/', signal: new AbortController().signal }, stats);
  return { model, page, lines, stats, run };
}

const click = () => ({ content: [computer('left_click', { coordinate: [640, 400] })] });
const resultsOf = (request: { messages: Array<{ role: string; content: unknown[] }> }) => request.messages.at(-1)!.content as ToolResultBlock[];

describe('stuck loops in the agent loop', () => {
  it('a dead button: the third and fourth identical click are answered as errors, the fifth ends the run with agent_stuck', async () => {
    const t = setup([click(), click(), click(), click(), click(), click()]);
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: 'failed', code: 'agent_stuck', message: expect.stringContaining('5 times in a row') });
    // Five requests: the sixth turn was never asked for.
    expect(t.model.requests).toHaveLength(5);
    const answers = t.model.requests.slice(1).map((r) => resultsOf(r)[0]!);
    expect(answers.map((a) => a.is_error === true)).toEqual([false, false, true, true]);
    expect((answers[2]!.content[0] as { text: string }).text).toMatch(/^The page did not change: this is the third time in a row/);
    expect((answers[3]!.content[0] as { text: string }).text).toContain('fourth time');
    // What the action showed is still there after the warning (the earlier computer tool answers with a screenshot).
    expect(answers[2]!.content.some((b) => b.type === 'image')).toBe(true);
    expect(t.lines.filter((l) => l.type === 'repeated_action').map((l) => [l.fields.repeats, l.fields.outcome])).toEqual([
      [3, 'warned'],
      [4, 'warned'],
      [5, 'stopped'],
    ]);
    // Each click ran and counts as an action: the first five.
    expect(t.stats.nAgentActions).toBe(5);
  });

  it('a counter: the page changes under each identical click, and the run goes on to its finish', async () => {
    const t = setup([click(), click(), click(), click(), click(), click(), { content: [finish('completed', { output: 6 })] }], () => undefined);
    // Each click moves the counter.
    const counting = setup([click(), click(), click(), click(), click(), click(), { content: [finish('completed', { output: 6 })] }], () => counting.page.changes());
    expect(await counting.run()).toEqual({ status: 'completed', output: 6 });
    expect(counting.lines.filter((l) => l.type === 'repeated_action')).toEqual([]);
    expect(counting.model.requests.slice(1).every((r) => resultsOf(r).every((b) => !b.is_error))).toBe(true);
    // The same script on a page that does not change is stopped.
    expect(await t.run()).toMatchObject({ code: 'agent_stuck' });
  });

  it('waits and screenshots between the clicks neither count nor break the streak; another action does', async () => {
    const wait = { content: [computer('wait', { duration: 0.05 })] };
    const shot = { content: [computer('screenshot')] };
    const t = setup([click(), wait, click(), shot, click(), wait, click(), click(), { content: [finish('completed')] }]);
    expect(await t.run()).toMatchObject({ code: 'agent_stuck' });
    const other = { content: [computer('left_click', { coordinate: [10, 10] })] };
    const u = setup([click(), click(), other, click(), click(), { content: [finish('completed', { output: 'done' })] }]);
    expect(await u.run()).toEqual({ status: 'completed', output: 'done' });
  });
});

describe('the repeat watch', () => {
  const call = (action: string, input: Record<string, unknown> = {}): ToolUseBlock => ({ type: 'tool_use', id: 'x', name: 'computer', input: { action, ...input } });
  const COUNTED = new Set(['left_click', 'scroll', 'wait']);

  it('takes the same input with its keys in another order as the same action', async () => {
    const { session } = sessionWithPage();
    const watch = createRepeatWatch(session);
    const signal = new AbortController().signal;
    const verdicts = [];
    for (const input of [{ coordinate: [1, 2], text: 'a' }, { text: 'a', coordinate: [1, 2] }, { coordinate: [1, 2], text: 'a' }]) {
      verdicts.push((await watch.after({ type: 'tool_use', id: 'x', name: 'computer', input: { action: 'type', ...input } }, { action: 'type', counted: true }, signal)).kind);
    }
    expect(verdicts).toEqual(['go', 'go', 'warn']);
  });

  /** The verdicts of the watch for these calls in a row, on a page that never changes. */
  async function verdictsOf(calls: ToolUseBlock[]): Promise<string[]> {
    const { session } = sessionWithPage();
    const watch = createRepeatWatch(session);
    const out: string[] = [];
    for (const c of calls) out.push((await watch.after(c, { action: String((c.input as { action?: string }).action ?? c.name), counted: true }, new AbortController().signal)).kind);
    return out;
  }

  it('takes pointer coordinates a few px apart as one target, in both tools\' forms; farther apart, or other numbers, as another action', async () => {
    const at = (x: number, y: number) => call('left_click', { coordinate: [x, y] });
    expect(await verdictsOf([at(640, 400), at(641, 400), at(640, 400), at(641, 399), at(640, 400)])).toEqual(['go', 'go', 'warn', 'warn', 'stop']);
    expect(await verdictsOf([at(640, 400), at(640 + SAME_TARGET_PX + 1, 400), at(640, 400)])).toEqual(['go', 'go', 'go']);
    const drag = (x: number) => call('left_click_drag', { start_coordinate: [x, 10], coordinate: [300, 10] });
    expect(await verdictsOf([drag(10), drag(12), drag(10)])).toEqual(['go', 'go', 'warn']);
    const browser = (x: number, input: Record<string, unknown> = {}): ToolUseBlock => ({ type: 'tool_use', id: 'b', name: 'left_click', toolset_name: 'browser', input: { target: { type: 'coordinate', x, y: 120 }, ...input } }) as ToolUseBlock;
    expect(await verdictsOf([browser(140), browser(139), browser(141)])).toEqual(['go', 'go', 'warn']);
    expect(await verdictsOf([browser(140), browser(140, { modifiers: 'shift' }), browser(140)])).toEqual(['go', 'go', 'go']);
    // Only coordinates have a tolerance: a scroll of 3 and one of 4 are two actions.
    const scroll = (amount: number) => call('scroll', { coordinate: [640, 400], scroll_direction: 'down', scroll_amount: amount });
    expect(await verdictsOf([scroll(3), scroll(4), scroll(3)])).toEqual(['go', 'go', 'go']);
  });

  it('a page that cannot be read breaks the streak (it is not shown to be unchanged)', async () => {
    const session = { ...createFakeSession(), tab: () => ({ id: 't', contentDigest: async () => Promise.reject(new Error('navigating')) }) as unknown as BrowserTab } as BrowserSession;
    const watch = createRepeatWatch(session);
    for (let i = 0; i < 6; i++) expect((await watch.after(call('left_click'), { action: 'left_click', counted: true }, new AbortController().signal)).kind).toBe('go');
  });

  it('warns exactly at the third and fourth, stops exactly at the fifth identical action on an unchanged page, whatever comes between (generated)', async () => {
    // Points a few px apart (one target) and far apart (another).
    const step = fc.record({ action: fc.constantFrom('left_click', 'scroll', 'wait', 'screenshot'), at: fc.constantFrom(100, 101, 103, 104, 140), changes: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const { session, page } = sessionWithPage();
        const watch = createRepeatWatch(session);
        // The reference: a streak of counted actions (waits and reads skipped), each the same as the one before and leaving the digest it found.
        let last: { action: string; at: number; digest: number } | undefined;
        let streak = 0;
        for (const s of steps) {
          if (s.changes) page.changes();
          const counted = COUNTED.has(s.action);
          const verdict = await watch.after(call(s.action, { coordinate: [s.at, s.at] }), { action: s.action, counted }, new AbortController().signal);
          if (!counted || s.action === 'wait') {
            expect(verdict.kind).toBe('go');
            continue;
          }
          streak = last && last.action === s.action && Math.abs(last.at - s.at) <= SAME_TARGET_PX && last.digest === page.digest ? streak + 1 : 1;
          last = { action: s.action, at: s.at, digest: page.digest };
          expect(verdict.kind).toBe(streak >= STUCK_STOP_AT ? 'stop' : streak >= STUCK_WARN_AT ? 'warn' : 'go');
        }
      }),
      { numRuns: 300 },
    );
  });
});
