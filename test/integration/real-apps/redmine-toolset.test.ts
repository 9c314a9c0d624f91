/**
 * The browser toolset's members one by one on Debian's Redmine (docs/action-spaces.md), where an
 * agent meets what fixture pages did not show: labels made of a link and a colon, a file input
 * with no label, a list filtered by a poll of its search box, a search field submitted with
 * Return, text areas of several lines. Each check is on what Redmine itself serves or does.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox } from '../../../src/browser/types.js';
import { createSilentLogger } from '../../../src/telemetry/logger.js';
import { squash } from '../../support/real-apps/page-read.js';
import { startRedmine, type Redmine } from '../../support/real-apps/redmine.js';
import { openToolsetPage, type ToolsetPage } from '../../support/real-apps/toolset-page.js';

let redmine: Redmine;
let sandbox: BrowserSandbox;
let page: ToolsetPage;
let issueId: number;

beforeAll(async () => {
  redmine = await startRedmine();
  sandbox = createPlaywrightSandbox({ logger: createSilentLogger(), hostRules: redmine.hostRules });
  const { issue } = await redmine.post<{ issue: { id: number } }>('/issues.json', {
    issue: { project_id: redmine.facts.project.id, subject: 'Receipts show the wrong VAT rate', description: 'Seen on orders from Belgium.', watcher_user_ids: [redmine.facts.users.kmensah!.id] },
  });
  issueId = issue.id;
}, 240_000);

afterAll(async () => {
  await page?.close();
  await sandbox?.close();
  await redmine?.stop();
});

const ref = (element: { ref?: string }) => ({ type: 'ref', ref: element.ref });

/** A fresh tab on the new issue form, signed in as alice. */
beforeEach(async () => {
  await page?.close();
  page = await openToolsetPage(sandbox, `${redmine.origin}/projects/${redmine.facts.project.identifier}/issues/new`, [redmine.host]);
  await page.call('form_input', { target: ref(await page.element('textbox', 'Login')), value: 'alice' });
  await page.call('form_input', { target: ref(await page.element('textbox', /^Password/)), value: redmine.facts.password });
  const signedIn = await page.call('left_click', { target: ref(await page.element('button', 'Login')) });
  expect(signedIn.ok, signedIn.text).toBe(true);
});

/** Roles of the controls whose names are compared. */
const CONTROLS = new Set(['textbox', 'searchbox', 'combobox', 'checkbox', 'radio', 'button', 'link']);

/** Where the toolset's names and Chromium's differ on the page now, one line each. */
async function nameDifferences(where: string): Promise<string[]> {
  const read = await page.readAll();
  const chromium = (await page.chromiumNames()).map((c) => ({ role: c.role, name: squash(c.name) }));
  const chromiumNames = new Set(chromium.map((c) => c.name));
  const ours = new Set(read.filter((e) => e.ref).map((e) => e.name));
  return [
    ...read.filter((e) => e.ref && e.name && !chromiumNames.has(e.name)).map((e) => `${where}: the toolset says ${e.role} "${e.name}", Chromium has no such name`),
    ...chromium.filter((c) => CONTROLS.has(c.role) && c.name && !ours.has(c.name)).map((c) => `${where}: Chromium names a ${c.role} "${c.name}", the toolset does not`),
  ];
}

describe('the browser toolset on Redmine', () => {
  it("names every control of the issue form, the watcher dialog, the issue list and an issue as Chromium's accessibility tree does", { timeout: 180_000 }, async () => {
    const differences = [await nameDifferences('the new issue form')];
    await page.call('left_click', { target: ref(await page.element('link', 'Search for watchers to add')) });
    await page.element('textbox', /^Search for user/);
    differences.push(await nameDifferences('the watcher dialog'));
    await page.call('navigate', { url: `${redmine.origin}/projects/${redmine.facts.project.identifier}/issues` });
    differences.push(await nameDifferences('the issue list'));
    await page.call('navigate', { url: `${redmine.origin}/issues/${issueId}` });
    differences.push(await nameDifferences('an issue'));
    expect(differences.flat()).toEqual([]);
  });

  it("waits, after a search is typed into the watcher dialog, for the list its poll brings, before the next read", { timeout: 180_000 }, async () => {
    await page.call('left_click', { target: ref(await page.element('link', 'Search for watchers to add')) });
    const search = await page.element('textbox', /^Search for user/);
    const typed = await page.call('form_input', { target: ref(search), value: 'Kofi' });
    expect(typed.ok, typed.text).toBe(true);
    // Redmine's dialog filters its list by a poll of the box (setInterval, 300 ms) and an XHR.
    const listed = (await page.readAll()).filter((e) => e.dialog !== undefined && e.role === 'checkbox').map((e) => e.name);
    expect(listed).toEqual(['Kofi Mensah', 'Kofi Osei']);
  });

  it('presses Return in the field that was just filled: the search box submits its search', { timeout: 180_000 }, async () => {
    const search = await page.element('textbox', /^Search\s?:$/);
    await page.call('form_input', { target: ref(search), value: 'VAT' });
    const pressed = await page.call('key', { text: 'Return' });
    expect(pressed.ok, pressed.text).toBe(true);
    // Redmine answers the search with its results page, which lists the issue.
    const read = await page.readAll();
    expect(read.some((e) => e.role === 'link' && e.name.includes('Receipts show the wrong VAT rate')), read.map((e) => e.line).join('\n').slice(0, 2000)).toBe(true);
  });

  it('reads a text area of several lines with its line breaks', { timeout: 180_000 }, async () => {
    const description = await page.element('textbox', 'Description');
    await page.call('form_input', { target: ref(description), value: 'h2. Steps\n\n# Open the receipt\n# Compare the VAT line' });
    const text = (await page.call('read_page', { filter: 'interactive' })).text;
    const line = text.split('\n').find((l) => l.includes(`[${description.ref}]`)) ?? '';
    // However a read writes a line break in a value (an escape), the lines stay apart.
    expect(line).toMatch(/h2\. Steps(\\n)+# Open the receipt\\n# Compare the VAT line/);
  });
});
