import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import type { StaticServer } from '../support/static-server.js';
import { startWidgetSite } from '../support/widget-site.js';
import { openWidgetPage, resultText, type WidgetHarness } from '../support/widget-tasks.js';

/**
 * The toolset on a page built like the Redmine new-issue form that showed its gaps
 * (test/fixtures/widgets/redmine-issue.html, jQuery from npm): a modal "Add watchers" dialog
 * loaded by XMLHttpRequest, whose search box a 300 ms poll watches; a tracker select with 60
 * options; a key pressed after form_input.
 */
const silent = createSilentLogger();
let site: StaticServer;
let sandbox: BrowserSandbox;
let h: WidgetHarness;

beforeAll(async () => {
  site = await startWidgetSite();
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: 'MAP widgets.test 127.0.0.1' });
});

afterEach(async () => {
  await h?.close();
});

afterAll(async () => {
  await sandbox?.close();
  await site?.close();
});

const open = async () => {
  h = await openWidgetPage(sandbox, `http://widgets.test:${site.port}`, 'redmine-issue.html');
};
const text = async (name: string, input: Record<string, unknown> = {}) => {
  const report = await h.call(name, input);
  expect(report.ok, resultText(report.result)).toBe(true);
  return resultText(report.result).trim();
};
const refOf = (read: string, line: RegExp) => {
  const ref = new RegExp(`${line.source}.*?\\[(ref_\\d+)\\]`).exec(read)?.[1];
  if (!ref) throw new Error(`no line ${line} in:\n${read}`);
  return ref;
};
const target = (ref: string) => ({ type: 'ref', ref });

/** Opens the "Add watchers" dialog as the model would: find the link, click it. */
const openWatchers = async () => {
  await text('left_click', { target: target(refOf(await text('find', { query: 'search for watchers to add' }), /link "Search for watchers to add"/)) });
};

describe('an open dialog is read first', () => {
  it('read_page shows the modal dialog first, says it is open and modal, then the page behind it', async () => {
    await open();
    await openWatchers();
    const read = (await text('read_page')).split('\n');
    expect(read[0]).toMatch(/^dialog "Add watchers" \[ref_\d+\] \(open, modal\)$/);
    const searchAt = read.findIndex((l) => /^ {2,}textbox "Search for user:"/.test(l));
    const behind = read.indexOf('(the page behind the modal dialog: close the dialog to act on it)');
    const tracker = read.findIndex((l) => /combobox "Tracker \*"/.test(l));
    expect(searchAt).toBeGreaterThan(0);
    expect(behind).toBeGreaterThan(searchAt);
    expect(tracker).toBeGreaterThan(behind);
    // Read once: not again where it sits at the end of the document.
    expect(read.filter((l) => l.includes('dialog "Add watchers"'))).toHaveLength(1);
  });

  it("a model taking over (the brief opening, 4,000 characters of the viewport) gets the dialog and its controls, not a long select's options", async () => {
    await open();
    await openWatchers();
    const [brief] = await h.space.opening!(new AbortController().signal, { brief: true });
    const said = brief?.type === 'text' ? brief.text : '';
    expect(said).toMatch(/\ndialog "Add watchers" \[ref_\d+\] \(open, modal\)\n {2}button "Close"/);
    expect(said).toMatch(/\n {2}textbox "Search for user:" \[ref_\d+\]/);
    expect(said).toMatch(/\n {2}button "Add" \[ref_\d+\]/);
    // The tracker's 60 options are cut at 10, with where to read them.
    expect(said.match(/\n {2}option "(Bug|Feature|Support|Tracker \d+)"/g)).toHaveLength(10);
    expect(said).toMatch(/\n {2}\(50 more options: read_page with ref_\d+ lists them\)/);
  });
});

describe('settling on the dialog', () => {
  it('a value set in the search box is waited for until the poll has asked the server and the list shows the answer', async () => {
    await open();
    await openWatchers();
    const search = refOf(await text('read_page', { filter: 'interactive' }), /textbox "Search for user:"/);
    await text('form_input', { target: target(search), value: 'kofi' });
    // No wait of the model's own: the read right after shows the filtered list.
    const users = (await text('read_page', { filter: 'interactive' })).split('\n').filter((l) => /^ {2}checkbox /.test(l));
    expect(users.map((l) => /checkbox "([^"]+)"/.exec(l)?.[1])).toEqual(['Kofi Mensah', 'Kofi Osei']);
  });
});

describe('a key after form_input', () => {
  it('goes back to the field form_input left without the focus, and the result says so', async () => {
    await open();
    const subject = refOf(await text('find', { query: 'subject' }), /textbox "Subject \*"/);
    await text('form_input', { target: target(subject), value: 'Printer on fire' });
    const pressed = await text('key', { text: 'Return' });
    expect(pressed).toBe(`Pressed Return.\nIt went to textbox "Subject *" (${subject}), the element you last acted on: nothing had the focus (form_input leaves a field as a person does), so it was given the focus back first.`);
    // Return in the field submitted its form.
    expect(await h.state("document.getElementById('flash').textContent")).toBe('Issue "Printer on fire" created.');
  });

  it('says where a key went when a field has the focus, and when nothing has it', async () => {
    await open();
    const subject = refOf(await text('find', { query: 'subject' }), /textbox "Subject \*"/);
    await text('left_click', { target: target(subject) });
    expect(await text('type', { text: 'Jam' })).toBe('Typed.\nIt went to textbox "Subject *".');
    // A click on the page's margin: the focus leaves the field, and the model acted on no element.
    await text('left_click', { target: { type: 'coordinate', x: 990, y: 690 } });
    expect(await text('key', { text: 'Return' })).toBe('Pressed Return.\nNo element has the focus: it went to the page itself. Click the field (or use form_input) to type into it.');
    expect(await h.state("document.getElementById('flash').hidden")).toBe(true);
  });
});
