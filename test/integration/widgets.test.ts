import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import type { StaticServer } from '../support/static-server.js';
import { startWidgetSite } from '../support/widget-site.js';
import { callsOf, measureFindHits, openWidgetPage, resultText, runWidgetTask, WIDGET_TASKS } from '../support/widget-tasks.js';

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
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: 'MAP widgets.test 127.0.0.1,MAP partner.test 127.0.0.1' });
});

afterAll(async () => {
  await sandbox?.close();
  await site?.close();
});

describe('form_input on real component libraries', () => {
  for (const task of WIDGET_TASKS) {
    it(`${task.widget}: ${task.prepare ? 'prepare, ' : ''}find, then form_input ${JSON.stringify(task.value)}, in ${callsOf(task)} calls`, async () => {
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

describe('frames', () => {
  it('reads into a same-origin frame with stable references, and not into a frame outside the allow-list', async () => {
    const h = await openWidgetPage(sandbox, origin, `embedded.html?partner=${encodeURIComponent(`http://partner.test:${site.port}/quill.html`)}`);
    try {
      const page = resultText((await h.call('read_page', { filter: 'all' })).result);
      expect(page).toMatch(/^ {2}iframe "Legacy order form" \[ref_\d+\]\n {4}main \[ref_\d+\]\n {6}heading "New order"/m);
      const tags = /combobox "Tags" \[(ref_\d+)\]/.exec(page)?.[1];
      expect(tags).toBeDefined();
      const again = resultText((await h.call('read_page', { filter: 'interactive' })).result);
      expect(again).toContain(`combobox "Tags" [${tags}]`);
      // The partner's frame is listed, and nothing of it: its document was refused.
      expect(page).toMatch(/iframe "Partner widget" \[ref_\d+\]$/m);
      expect(page).not.toContain('Reply text');
      expect(site.requests.some((r) => r.host.startsWith('partner.test'))).toBe(false);
    } finally {
      await h.close();
    }
  });

  it("waits for a frame's navigation: a click in the frame answers once its new document is loaded and still", async () => {
    const h = await openWidgetPage(sandbox, origin, 'frames-nav.html');
    try {
      const link = /link "Continue to payment" \[(ref_\d+)\]/.exec(resultText((await h.call('find', { query: 'continue to payment link' })).result))?.[1];
      expect(link).toBeDefined();
      const clicked = await h.call('left_click', { target: { type: 'ref', ref: link } });
      expect(clicked.ok).toBe(true);
      const page = resultText((await h.call('read_page', { filter: 'all' })).result);
      expect(page).toContain('Payment step 2');
      expect(page).toMatch(/textbox "Card holder" \[ref_\d+\]/);
    } finally {
      await h.close();
    }
  });
});

describe('form_input refusals on widgets', () => {
  it('names the options a combobox offers when none is the value, and leaves the value unchanged', async () => {
    const h = await openWidgetPage(sandbox, origin, 'tom-select.html');
    try {
      const ref = /\[(ref_\d+)\]/.exec(resultText((await h.call('find', { query: 'customer dropdown' })).result))?.[1];
      const refused = await h.call('form_input', { target: { type: 'ref', ref }, value: 'Nonexistent Corp' });
      expect(refused.ok).toBe(false);
      expect(resultText(refused.result)).toMatch(/has no option "Nonexistent Corp"; the options it offers include: .*"Acme Corporation".*"Vandelay Imports"/);
      expect(await h.state('customerSelect.getValue()')).toBe('');
    } finally {
      await h.close();
    }
  });
});
