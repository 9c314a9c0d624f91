import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ElementIdentity } from '../../src/browser/types.js';
import { oneOfNamesakes } from '../../src/run-cache/precondition.js';
import { recordView } from '../../src/run-cache/record-view.js';

/** A Django 3.2 change page as the worker reads it: no main landmark, header and breadcrumbs first. */
function changePage(headerLinks: number, notes: string): string[] {
  return [
    'heading "Django administration" [ref_1] level=1',
    ...Array.from({ length: headerLinks }, (_v, i) => `link "Recent action ${i}: changed Invoice #${i} from a vendor with a long name" [ref_${i + 10}] href="/admin/invoices/invoice/${i}/change/"`),
    'navigation [ref_2]',
    ...Array.from({ length: 60 }, (_v, i) => `  link "Model ${i}" [ref_${i + 500}] href="/admin/app/model${i}/"`),
    'heading "Change invoice" [ref_900] level=1',
    'form [ref_901]',
    '  group [ref_902]',
    '    textbox "Vendor:" [ref_903] value="Harbour Freight & Co" required',
    `    textbox "Notes:" [ref_904] multiline value="${notes}"`,
    '    checkbox "Paid" [ref_905] unchecked',
    '  button "Save" [ref_906]',
  ];
}

describe('the final check\'s view of a page with no main landmark', () => {
  it('reads it in order, the navigation in a line, when it fits', () => {
    const view = recordView(changePage(3, 'Two pallets.'), 4_000);
    expect(view.main).toBe(false);
    expect(view.text.split('\n')[0]).toBe('heading "Django administration" [ref_1] level=1');
    expect(view.text).toContain('navigation (summarised): 60 links and items: Model 0, Model 1, Model 2, Model 3, Model 4, Model 5, and 54 more');
    expect(view.text).toContain('value="Two pallets."');
  });

  it('shows the forms first when the page is more than the budget, and the rest after', () => {
    const view = recordView(changePage(80, 'Two pallets.'), 4_000);
    expect(view.text.split('\n')[0]).toBe('form [ref_901]');
    expect(view.text).toContain('checkbox "Paid" [ref_905] unchecked');
    expect(view.text).toContain('Elsewhere on the page:');
    expect(view.text.length).toBeLessThanOrEqual(4_001);
  });

  it('never passes its budget, and keeps every field of a form that fits in it, whatever is around it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200 }), fc.string({ maxLength: 300 }).map((s) => s.replace(/["\\\n]/g, ' ')), fc.integer({ min: 600, max: 6_000 }), (links, notes, budget) => {
        const view = recordView(changePage(links, notes), budget);
        expect(view.text.length).toBeLessThanOrEqual(budget + 1);
        for (const field of ['textbox "Vendor:"', 'textbox "Notes:"', 'checkbox "Paid"']) expect(view.text).toContain(field);
      }),
    );
  });
});

describe('one of several elements named after the input', () => {
  const cached: ElementIdentity = { role: 'link', name: 'Invoice #5 from Cobalt Software Ltd', tag: 'a', href: '/admin/invoices/invoice/5/change/', path: 'div>table>tbody>tr:nth-of-type(1)>th>a' };
  const row: ElementIdentity = { ...cached, name: 'Invoice #6 from Harbour Freight & Co', href: '/admin/invoices/invoice/6/change/' };
  const message: ElementIdentity = { ...row, path: 'ul>li>a' };

  it('is the one at the earlier element\'s place, among links to the same record', () => {
    expect(oneOfNamesakes(cached, [message, row])).toBe(row);
    expect(oneOfNamesakes(cached, [row, message])).toBe(row);
  });

  it('is the first of links that all lead to the same address, wherever the earlier one was', () => {
    expect(oneOfNamesakes({ ...cached, path: 'elsewhere>a' }, [message, row])).toBe(message);
  });

  it('is none when they lead to different records and nothing else tells them apart', () => {
    const other = { ...row, href: '/admin/invoices/invoice/7/change/', path: 'ul>li:nth-of-type(2)>a' };
    expect(oneOfNamesakes({ ...cached, path: 'elsewhere>a' }, [message, other])).toBeUndefined();
  });

  it('never picks an element of another kind, nor one of several that lead elsewhere unless it is at the earlier place', () => {
    const element = fc.record({
      tag: fc.constantFrom('a', 'button'),
      href: fc.option(fc.constantFrom('/admin/invoices/invoice/6/change/', '/admin/invoices/invoice/7/change/', '/admin/ledger/'), { nil: undefined }),
      path: fc.constantFrom('ul>li>a', 'table>tbody>tr:nth-of-type(1)>th>a', 'table>tbody>tr:nth-of-type(3)>th>a'),
    });
    fc.assert(
      fc.property(fc.array(element, { minLength: 2, maxLength: 6 }), (found) => {
        const identities: ElementIdentity[] = found.map((e) => ({ role: 'link', name: row.name, tag: e.tag, ...(e.href ? { href: e.href } : {}), path: e.path }));
        const chosen = oneOfNamesakes(cached, identities);
        if (!chosen) return;
        expect(identities).toContain(chosen);
        expect(chosen.tag).toBe('a');
        expect(chosen.href?.replace(/\d+/g, '#')).toBe('/admin/invoices/invoice/#/change/');
        const kind = identities.filter((e) => e.tag === 'a' && e.href?.startsWith('/admin/invoices/'));
        if (new Set(kind.map((e) => e.href)).size > 1) expect(chosen.path).toBe(cached.path);
      }),
    );
  });

  it('keeps only elements of the earlier one\'s kind', () => {
    const button: ElementIdentity = { role: 'link', name: row.name, tag: 'button' };
    expect(oneOfNamesakes(cached, [button, message])).toBe(message);
    expect(oneOfNamesakes(cached, [button, { ...button }])).toBeUndefined();
  });
});
