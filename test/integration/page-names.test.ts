import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { PlaywrightTab } from '../../src/browser/playwright-tab.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { startWidgetSite } from '../support/widget-site.js';
import { openWidgetPage, resultText, type WidgetHarness } from '../support/widget-tasks.js';
import { neverAborted } from '../support/env.js';

/**
 * Names from the browser's accessibility tree, and find with context, on real Chromium: the
 * names a screen reader hears (visually-hidden text, aria-labelledby), aria-describedby as a
 * description, and find telling apart elements of the same name by where they are.
 */
const silent = createSilentLogger();
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
let site: StaticServer;
let sandbox: BrowserSandbox;
let h: WidgetHarness;

beforeAll(async () => {
  server = await startStaticServer({
    root: '/nonexistent',
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(req.url === '/generated' ? generated : PAGE);
      return true;
    },
  });
  site = await startWidgetSite();
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: 'MAP widgets.test 127.0.0.1' });
  h = await openWidgetPage(sandbox, `http://widgets.test:${server.port}`, 'office');
});

afterAll(async () => {
  await h?.close();
  await sandbox?.close();
  await server?.close();
  await site?.close();
});

/** The page the generated cases are served on (set before each is opened). */
let generated = '';

/** Chromium's own name for the element a CSS selector finds, from its accessibility tree (CDP). */
async function chromiumName(harness: WidgetHarness, selector: string): Promise<string | undefined> {
  const cdp = await (harness.session.tab() as PlaywrightTab).cdp();
  const { result } = (await cdp.send('Runtime.evaluate', { expression: `document.querySelector(${JSON.stringify(selector)})` })) as { result: { objectId?: string } };
  if (!result.objectId) return undefined;
  const { nodes } = (await cdp.send('Accessibility.getPartialAXTree', { objectId: result.objectId, fetchRelatives: false })) as { nodes: Array<{ ignored?: boolean; name?: { value?: unknown } }> };
  await cdp.send('Runtime.releaseObject', { objectId: result.objectId });
  const node = nodes.find((n) => !n.ignored);
  return node ? String(node.name?.value ?? '').replace(/\s+/g, ' ').trim() : undefined;
}

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

/** The name in a read_page line (`role "name" [ref_N] …`), with the line's escapes undone. */
const nameIn = (line: string) => {
  const quoted = /^ *[a-z]+ "((?:[^"\\]|\\.)*)" \[/.exec(line)?.[1];
  return quoted === undefined ? '' : (JSON.parse(`"${quoted}"`) as string);
};
/** Roles whose line shows the element's text rather than a name (paragraphs, cells, list items…). */
const TEXT_ROLES = /^ *(paragraph|listitem|cell|gridcell|columnheader|rowheader|term|definition|caption|legend|code|blockquote|status|alert|text) /;

describe("names as Chromium's accessibility tree has them, on a page built like Redmine's new-issue form", () => {
  let r: WidgetHarness;
  beforeAll(async () => {
    r = await openWidgetPage(sandbox, `http://widgets.test:${site.port}`, 'redmine-issue.html');
  });
  afterAll(async () => {
    await r?.close();
  });
  const readAll = async () => resultText((await r.call('read_page', { filter: 'all' })).result);

  it('names the quick search "Search:" (a label of a link and a colon runs on), and a file input as its button says', async () => {
    const page = await readAll();
    expect(page).toMatch(/\n {2}textbox "Search:" \[ref_\d+\]/);
    expect(page).toMatch(/\n {4}button "Choose Files" \[ref_\d+\] \(file input, multiple\)/);
    expect(await chromiumName(r, '#q')).toBe('Search:');
    expect(await chromiumName(r, 'input[type=file]')).toBe('Choose Files');
  });

  it("never takes a toolbar's tab links for a field's label: the notes field under Edit/Preview is found by its legend", async () => {
    const found = resultText((await r.call('find', { query: 'notes field' })).result);
    expect(found).not.toContain('Edit Preview');
    expect(found.split('\n')[0]).toMatch(/^textbox \[ref_\d+\] multiline \(label "Notes"; /);
    // Chromium names it nothing either: the legend names the group.
    expect(await chromiumName(r, '#issue_notes')).toBe('');
  });

  it('keeps the line breaks of a multi-line value and of pre-formatted text', async () => {
    const description = /textbox "Description" \[(ref_\d+)\]/.exec(await readAll())?.[1];
    expect((await r.call('form_input', { target: { type: 'ref', ref: description }, value: 'Steps:\n1. print\n2. smoke' })).ok).toBe(true);
    const page = await readAll();
    expect(page).toContain(`textbox "Description" [${description}] multiline value="Steps:\\n1. print\\n2. smoke"`);
    expect(page).toMatch(/\n {2}code "Release 2\.3\\n- fixed the export" \[ref_\d+\]/);
  });

  it("gives every element it names the name Chromium's accessibility tree gives it", async () => {
    const tab = r.session.tab()!;
    const mismatches: string[] = [];
    let compared = 0;
    for (const line of (await readAll()).split('\n')) {
      const ref = /\[(ref_\d+)\]/.exec(line)?.[1];
      if (!ref || TEXT_ROLES.test(line)) continue;
      const identity = await tab.identify(ref, neverAborted);
      if (!identity.ok || !identity.value.path) continue;
      const chromium = await chromiumName(r, identity.value.path.split('>').join(' > '));
      if (chromium === undefined) continue;
      compared++;
      if (nameIn(line) !== chromium.slice(0, 100)) mismatches.push(`${line.trim()}  ← Chromium: ${JSON.stringify(chromium)}`);
    }
    expect(compared).toBeGreaterThan(20);
    expect(mismatches).toEqual([]);
  });
});

describe('names of generated labels, against Chromium', () => {
  /** A piece of a label: a few words, maybe wrapped in an inline or a block element, with what separates it from the next. */
  const piece = fc.record({
    words: fc.constantFrom('Search', 'Due date', 'Price', '(EUR)', ':', '*', 'e-mail', 'optional', '-', 'Name'),
    wrap: fc.constantFrom('', 'span', 'b', 'em', 'a href="#"', 'abbr title="x"', 'div', 'p', 'span style="display:inline-block"', 'span style="display:block"', 'small'),
    after: fc.constantFrom('', ' ', '\n', '  ', '<br>'),
  });
  const label = fc.array(piece, { minLength: 1, maxLength: 5 }).map((pieces) =>
    pieces.map((p) => (p.wrap ? `<${p.wrap}>${p.words}</${p.wrap.split(' ')[0]}>` : p.words) + p.after).join(''),
  );

  it('names a field by its label as Chromium does, whatever inline and block elements, line breaks and spaces the label holds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(label, { minLength: 12, maxLength: 12 }), async (labels) => {
        generated = `<!doctype html><html lang="en"><body>${labels.map((l, i) => `<div><label for="f${i}">${l}</label> <input id="f${i}"></div>`).join('\n')}</body></html>`;
        const g = await openWidgetPage(sandbox, `http://widgets.test:${server.port}`, 'generated');
        try {
          const fields = resultText((await g.call('read_page', { filter: 'all' })).result).split('\n').filter((l) => /^ *textbox /.test(l));
          expect(fields).toHaveLength(labels.length);
          for (let i = 0; i < labels.length; i++) {
            expect({ label: labels[i], name: nameIn(fields[i]!) }).toEqual({ label: labels[i], name: (await chromiumName(g, `#f${i}`))!.slice(0, 100) });
          }
        } finally {
          await g.close();
        }
      }),
      { numRuns: 6 },
    );
  });
});
