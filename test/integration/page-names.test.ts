import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { openWidgetPage, resultText, type WidgetHarness } from '../support/widget-tasks.js';
import { neverAborted } from '../support/env.js';

/**
 * Names from the browser's accessibility tree, and find with context, on real Chromium: the
 * names a screen reader hears (visually-hidden text, aria-labelledby), aria-describedby as a
 * description, and find telling apart elements of the same name by where they are.
 */
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const SECTIONS = ['Invoices', 'Customers', 'Products', 'Suppliers', 'Projects', 'Contacts'];
const PAGE = `<!doctype html><html lang="en"><title>Back office</title>
<style>.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}</style>
<main>
<button id="theme"><svg aria-hidden="true" width="16" height="16"><circle cx="8" cy="8" r="6"/></svg><span class="sr">Toggle theme (current theme: auto)</span></button>
<div><span id="lbl">Billing e-mail</span> <input aria-labelledby="lbl" aria-describedby="hint"> <small id="hint">We send invoices here</small></div>
${SECTIONS.map((s) => `<section aria-label="${s}"><h2>${s}</h2><p>Some ${s.toLowerCase()}.</p><a href="/${s.toLowerCase()}/new">Add</a></section>`).join('\n')}
<table><thead><tr><th>Customer</th><th>Actions</th></tr></thead><tbody>
<tr><td>ACME</td><td><button>Edit</button></td></tr><tr><td>Globex</td><td><button>Edit</button></td></tr><tr><td>Initech</td><td><button>Edit</button></td></tr>
</tbody></table>
<div class="row"><span>Amount</span><input id="amount"></div>
<div class="row"><span>Reference</span><input id="reference"></div>
<div class="row"><label>Total <input id="total" readonly value="42.00"></label></div>
</main></html>`;

let server: StaticServer;
let sandbox: BrowserSandbox;
let h: WidgetHarness;

beforeAll(async () => {
  server = await startStaticServer({
    root: '/nonexistent',
    handle: (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      return true;
    },
  });
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: 'MAP widgets.test 127.0.0.1' });
  h = await openWidgetPage(sandbox, `http://widgets.test:${server.port}`, 'office');
});

afterAll(async () => {
  await h?.close();
  await sandbox?.close();
  await server?.close();
});

const read = async () => resultText((await h.call('read_page', { filter: 'all' })).result);
const first = async (query: string) => resultText((await h.call('find', { query })).result).split('\n')[0] ?? '';

describe("the browser's names", () => {
  it('names a button by its visually-hidden text, a field by aria-labelledby, with aria-describedby as its description', async () => {
    const page = await read();
    expect(page).toMatch(/button "Toggle theme \(current theme: auto\)" \[ref_\d+\]/);
    expect(page).toMatch(/textbox "Billing e-mail" \[ref_\d+\] description="We send invoices here"/);
  });

  it('reads the new name once the page changed it', async () => {
    const changed = await h.session.tab()!.evaluate("document.querySelector('#theme .sr').textContent = 'Toggle theme (current theme: dark)'", 5_000, neverAborted);
    expect(changed.ok).toBe(true);
    expect(await read()).toMatch(/button "Toggle theme \(current theme: dark\)"/);
  });
});

describe('find with context', () => {
  it('tells six "Add" links apart by the section they sit in, and says where each is', async () => {
    for (const section of SECTIONS) {
      const line = await first(`add ${section.toLowerCase()} link`);
      expect(line).toMatch(new RegExp(`^link "Add" \\[ref_\\d+\\] href="/${section.toLowerCase()}/new" \\(under "${section}"; in region "${section}"\\)$`));
    }
  });

  it('tells rows apart by their headers, and finds a field by the text just before it', async () => {
    expect(await first('edit Globex')).toMatch(/^button "Edit" \[ref_\d+\] \(row "Globex"; column "Actions"/);
    expect(await first('edit initech button')).toMatch(/row "Initech"/);
    expect(await first('amount field')).toMatch(/^textbox \[ref_\d+\] \(label "Amount"/);
    expect(await first('reference')).toMatch(/^textbox \[ref_\d+\] \(label "Reference"/);
  });
});

describe('form_input refusals say what would work', () => {
  it('refuses a read-only field that opens no calendar, and an element that is not a field', async () => {
    const total = /textbox "Total" \[(ref_\d+)\]/.exec(await read())?.[1];
    const refused = await h.call('form_input', { target: { type: 'ref', ref: total }, value: '2026-12-01' });
    expect(refused.ok).toBe(false);
    expect(resultText(refused.result)).toMatch(/is read-only and opened no calendar when clicked: it takes no typed value/);
    const heading = /heading "Invoices" \[(ref_\d+)\]/.exec(await read())?.[1];
    const notField = await h.call('form_input', { target: { type: 'ref', ref: heading }, value: 'x' });
    expect(resultText(notField.result)).toMatch(/is a heading, not a form field: click it, or find the field it belongs to/);
  });
});
