import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import type { StaticServer } from '../support/static-server.js';
import { startWidgetSite } from '../support/widget-site.js';
import { callsOf, measureFindHits, openWidgetPage, runWidgetTask, WIDGET_TASKS } from '../support/widget-tasks.js';

/**
 * The widget conformance suite: real component libraries (tom-select, select2 on jQuery,
 * flatpickr, Quill, Shoelace's web components in shadow DOM), loaded from their published dist
 * files. Every task is done as an ideal agent would, with find and form_input only, and checked
 * against the component's own state.
 */
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
let site: StaticServer;
let sandbox: BrowserSandbox;
let origin: string;

beforeAll(async () => {
  site = await startWidgetSite();
  origin = `http://widgets.test:${site.port}`;
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: 'MAP widgets.test 127.0.0.1' });
});

afterAll(async () => {
  await sandbox?.close();
  await site?.close();
});

describe('form_input on real component libraries', () => {
  for (const task of WIDGET_TASKS) {
    it(`${task.widget}: ${task.open ? 'open it, ' : ''}find, then form_input ${JSON.stringify(task.value)}, in ${callsOf(task)} calls`, async () => {
      const h = await openWidgetPage(sandbox, origin, task.page);
      try {
        const outcome = await runWidgetTask(h, task);
        expect(outcome.detail).not.toMatch(/^ref_\d+ (is|has|does|showed)/);
        expect(outcome.state).toEqual(task.want);
        expect(outcome.ok).toBe(true);
        expect(h.read.calls).toBe(callsOf(task));
      } finally {
        await h.close();
      }
    });
  }
});

describe('find on real component libraries', () => {
  it('ranks the intended element first for at least 95% of the description set', async () => {
    const { hits, total, misses } = await measureFindHits(sandbox, origin);
    expect(total).toBeGreaterThanOrEqual(20);
    expect(hits / total, misses.join('\n')).toBeGreaterThanOrEqual(0.95);
  });
});
