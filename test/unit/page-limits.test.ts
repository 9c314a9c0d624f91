import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createConsoleBudget, createLimitReporter } from '../../src/browser/page-limits.js';
import type { LimitReached } from '../../src/browser/types.js';
import { createTabConsole } from '../../src/browser/playwright-tab.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { changeNotes } from '../../src/toolset/results.js';
import { buildEncoderArgs } from '../../src/recorder/ffmpeg-process.js';

/** A page's console lines, any text (multi-byte too), added to one of three tabs, with reads between. */
const step = fc.oneof(
  fc.record({ kind: fc.constant('line' as const), tab: fc.integer({ min: 0, max: 2 }), text: fc.string({ maxLength: 400, unit: 'grapheme' }) }),
  fc.record({ kind: fc.constant('read' as const), tab: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('close' as const), tab: fc.integer({ min: 0, max: 2 }) }),
);

describe('the console limits of one session (docs/security.md#limits)', () => {
  it('never hold more than CONSOLE_BYTES_MAX across tabs, and account for every line kept or dropped', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_024, max: 8_192 }), fc.integer({ min: 10, max: 40 }), fc.integer({ min: 100, max: 300 }), fc.array(step, { maxLength: 300 }), (maxBytes, entriesMax, lineMax, steps) => {
        const budget = createConsoleBudget(maxBytes);
        const told: LimitReached[] = [];
        const reached = createLimitReporter(createSilentLogger(), (r) => told.push(r));
        const make = (i: number) => createTabConsole(`tab_${i}`, { consoleLineMaxChars: lineMax, consoleEntriesMax: entriesMax, budget, reached });
        const tabs = [make(0), make(1), make(2)];
        let added = 0;
        let accounted = 0;
        const read = (i: number) => {
          for (const entry of tabs[i]!.drain()) {
            if (entry.level === 'worker') accounted += Number(/^(\d+)/.exec(entry.text)![1]);
            else {
              expect(entry.text.length).toBeLessThanOrEqual(lineMax);
              accounted++;
            }
          }
        };
        for (const s of steps) {
          if (s.kind === 'line') {
            tabs[s.tab]!.add('log', s.text);
            added++;
          } else if (s.kind === 'read') read(s.tab);
          else {
            // A closed tab's lines are gone unread; it is replaced by a fresh one.
            tabs[s.tab]!.drop();
            tabs[s.tab] = make(s.tab);
          }
          expect(budget.heldBytes).toBeLessThanOrEqual(maxBytes);
        }
        // Reads of every tab at the end give back every byte.
        for (const i of [0, 1, 2]) read(i);
        expect(budget.heldBytes).toBe(0);
        expect(accounted).toBeLessThanOrEqual(added);
        // Each limit told once per scope: the budget once for the session, the others once per tab.
        const keys = told.map((r) => `${r.limit} ${r.detail ?? ''}`);
        expect(new Set(keys).size).toBe(keys.length);
        expect(told.filter((r) => r.limit === 'CONSOLE_BYTES_MAX').length).toBeLessThanOrEqual(1);
      }),
      { numRuns: 200 },
    );
  });

  it('tells what a read missed: lines past the budget, and the oldest past the count', () => {
    const told: LimitReached[] = [];
    const reached = createLimitReporter(createSilentLogger(), (r) => told.push(r));
    // 100 bytes a line: a budget of 500 holds 5.
    const poor = createTabConsole('tab_1', { consoleLineMaxChars: 2_000, consoleEntriesMax: 10, budget: createConsoleBudget(500), reached });
    for (let i = 0; i < 30; i++) poor.add('log', 'é'.repeat(50));
    const first = poor.drain();
    expect(first.filter((e) => e.level === 'log')).toHaveLength(5);
    expect(first[0]!.text).toMatch(/^25 console lines were dropped: the execution keeps at most 500 bytes of console at once \(CONSOLE_BYTES_MAX\)/);
    // Read, the budget is free again.
    poor.add('log', 'again');
    expect(poor.drain().map((e) => e.text)).toEqual(['again']);
    // A budget of 2,000 holds 20, but the tab keeps 10.
    const busy = createTabConsole('tab_2', { consoleLineMaxChars: 2_000, consoleEntriesMax: 10, budget: createConsoleBudget(2_000), reached });
    for (let i = 0; i < 30; i++) busy.add('log', `${i}`.padEnd(100, '.'));
    const second = busy.drain();
    expect(second[0]!.text).toMatch(/^20 older console entries were dropped: a tab keeps at most 10 between two reads \(CONSOLE_ENTRIES_MAX\)/);
    expect(second.slice(1).map((e) => e.text.slice(0, 2))).toEqual(['20', '21', '22', '23', '24', '25', '26', '27', '28', '29']);
    expect(told.map((r) => [r.limit, r.max])).toEqual([['CONSOLE_BYTES_MAX', 500], ['CONSOLE_ENTRIES_MAX', 10]]);
  });

  it('tell a computer-use agent why a popup was closed, its url scrubbed', () => {
    const note = changeNotes(
      { drainChanges: () => [{ type: 'popup_closed', tabId: 'tab_1', url: 'https://shop.test/p?token=s3cr3t', openPages: 10, limit: 'BROWSER_TABS_MAX' }], pendingFileChooser: () => undefined },
      (text) => text.replace('s3cr3t', '{{token}}'),
    );
    expect(note).toBe('A popup the page opened (https://shop.test/p?token={{token}}) was closed: 10 pages were open, the most one execution may have (BROWSER_TABS_MAX).');
  });

  it('give the encoder VIDEO_MAX_BITRATE with two seconds of buffer, 2 Mbit/s by default', () => {
    const rate = (maxBitrate?: number) => {
      const { output } = buildEncoderArgs({ ffmpegPath: 'ffmpeg', fps: 10, crf: 30, width: 1280, height: 800, outputPath: '/x.mp4', ...(maxBitrate ? { maxBitrate } : {}) });
      return [output[output.indexOf('-maxrate') + 1], output[output.indexOf('-bufsize') + 1]];
    };
    expect(rate()).toEqual(['2000000', '4000000']);
    expect(rate(500_000)).toEqual(['500000', '1000000']);
  });
});
