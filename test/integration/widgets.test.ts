import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { PlaywrightTab } from '../../src/browser/playwright-tab.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import type { StaticServer } from '../support/static-server.js';
import { startWidgetSite } from '../support/widget-site.js';
import { callsOf, measureFindHits, openWidgetPage, resultText, runWidgetTask, WIDGET_TASKS } from '../support/widget-tasks.js';

/**
 * The widget conformance suite: real component libraries (tom-select, select2 on jQuery,
 * flatpickr, Quill, Shoelace's web components in shadow DOM), loaded from their published dist
 * files. Every task is done as an ideal agent would, with find and form_input only, and checked
 * against the component's own state.
 */
const silent = createSilentLogger();
/** The widget site under four names: two more sites of the allow-list, and a partner outside it. */
const HOST_RULES = 'MAP widgets.test 127.0.0.1,MAP partner.test 127.0.0.1,MAP pay.test 127.0.0.1,MAP legacy.test 127.0.0.1';
let site: StaticServer;
let sandbox: BrowserSandbox;
let origin: string;

beforeAll(async () => {
  site = await startWidgetSite();
  origin = `http://widgets.test:${site.port}`;
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: HOST_RULES });
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

describe('frames of other sites', () => {
  it('fills and submits a payment form in an allowed frame of another site in the page\'s process, by references only; a frame outside the allow-list stays blocked and unread', async () => {
    await payThroughFrame(sandbox, false);
  });

  it('does the same when the frame runs in a process of its own (Chromium with site isolation)', async () => {
    const isolated = createPlaywrightSandbox({ logger: silent, chromiumPath: '/usr/bin/chromium', hostRules: HOST_RULES });
    try {
      await payThroughFrame(isolated, true);
    } finally {
      await isolated.close();
    }
  });
});

/**
 * The ideal agent pays on a checkout page whose card form is a frame of another site of the
 * allow-list, by find and read_page references only; the payment is read back from the
 * provider's own state in its frame. A tracker's frame outside the allow-list stays unread.
 */
async function payThroughFrame(sandbox: BrowserSandbox, ownProcess: boolean): Promise<void> {
  const tracker = `http://partner.test:${site.port}/quill.html`;
  const h = await openWidgetPage(sandbox, origin, `checkout.html?pay=pay.test&tracker=${encodeURIComponent(tracker)}`);
  const refOf = (text: string, pattern: RegExp) => pattern.exec(text)?.[1];
  try {
    // Whether the provider's frame runs in a process of its own (site isolation) or in the page's.
    const tab = h.session.tab() as PlaywrightTab;
    const payFrame = tab.page.frames().find((f) => f.url().startsWith('http://pay.test'));
    expect(payFrame).toBeDefined();
    const attached = await tab.page.context().newCDPSession(payFrame!).then((s) => s.detach().then(() => true), () => false);
    expect(attached).toBe(ownProcess);
    const page = resultText((await h.call('read_page', { filter: 'all' })).result);
    // The provider's document, read in its frame, under the frame's line.
    expect(page).toMatch(/^ {2}iframe "Payment" \[ref_\d+\]\n {4}heading "Card payment" \[ref_\d+\] level=2\n {4}form "Card payment" \[ref_\d+\]/m);
    // Named from the browser's accessibility tree of the frame (aria-describedby).
    expect(page).toMatch(/^ {6}textbox "Card number" \[ref_\d+\] description="16 digits, on the front of the card" required$/m);
    const save = refOf(page, /checkbox "Remember this card" \[(ref_\d+)\] unchecked/);
    expect(save).toBeDefined();
    // Read by its frame's reference: the frame's line, its document under it.
    const frameRef = refOf(page, /iframe "Payment" \[(ref_\d+)\]/);
    expect(resultText((await h.call('read_page', { ref: frameRef, filter: 'all' })).result)).toMatch(/^iframe "Payment" \[ref_\d+\]\n {2}heading "Card payment"/);
    // The tracker's frame is listed and nothing of it: its document was refused.
    expect(page).toMatch(/iframe "Analytics" \[ref_\d+\]\n {2}paragraph "Waiting for payment\."/);
    expect(page).not.toContain('Reply text');

    const fill = async (query: string, expected: RegExp, value: string) => {
      const first = resultText((await h.call('find', { query })).result).split('\n')[0] ?? '';
      expect(first).toMatch(expected);
      const filled = await h.call('form_input', { target: { type: 'ref', ref: refOf(first, /\[(ref_\d+)\]/) }, value });
      expect(filled.ok, resultText(filled.result)).toBe(true);
    };
    await fill('name on card', /^textbox "Name on card"/, 'Ada Lovelace');
    await fill('card number', /^textbox "Card number"/, '4242 4242 4242 4242');
    await fill('expiry month', /^combobox "Expiry month"/, '03 March');
    // A click lands through the frame's place on the page (brought into view first).
    const clicked = await h.call('left_click', { target: { type: 'ref', ref: save } });
    expect(clicked.ok, resultText(clicked.result)).toBe(true);
    const again = resultText((await h.call('read_page', { filter: 'interactive' })).result);
    expect(again).toContain(`checkbox "Remember this card" [${save}] checked`);
    expect(again).toContain('textbox "Name on card"');

    const pay = refOf(resultText((await h.call('find', { query: 'pay button' })).result).split('\n')[0] ?? '', /^button "Pay 84\.00 EUR" \[(ref_\d+)\]/);
    expect(pay).toBeDefined();
    const paid = await h.call('left_click', { target: { type: 'ref', ref: pay } });
    expect(paid.ok, resultText(paid.result)).toBe(true);
    expect(await h.state('window.payment', 'pay.test')).toEqual({ holder: 'Ada Lovelace', number: '4242424242424242', expiry: '03', save: true, clicked: 'Pay 84.00 EUR' });
    expect(resultText((await h.call('read_page', {})).result)).toContain('Payment accepted for Ada Lovelace.');
    expect(site.requests.some((r) => r.host.startsWith('partner.test'))).toBe(false);
    expect(site.requests.some((r) => r.host.startsWith('pay.test') && r.path === '/payment.html')).toBe(true);

    // The frame's references hold while its document does: once it navigated, an old one is refused.
    const holder = refOf(again, /textbox "Name on card" \[(ref_\d+)\]/);
    await h.state("(document.getElementById('payment').src += '?again', true)");
    await payFrame!.waitForURL(/again$/);
    await payFrame!.waitForLoadState('load');
    const late = await h.call('form_input', { target: { type: 'ref', ref: holder }, value: 'Grace Hopper' });
    expect(late.ok).toBe(false);
    expect(resultText(late.result)).toMatch(/stale or not found on the current page \(the page navigated since it was read\)/);
    const fresh = refOf(resultText((await h.call('read_page', { filter: 'interactive' })).result), /textbox "Name on card" \[(ref_\d+)\]/);
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(holder);
  } finally {
    await h.close();
  }
}
