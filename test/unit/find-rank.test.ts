import { describe, expect, it } from 'vitest';
import type { FoundElement } from '../../src/browser/types.js';
import { rankElements } from '../../src/toolset/find-rank.js';

const el = (i: number, role: string, name: string, context = '', inView = true): FoundElement => ({ i, role, name, context, inView });
const page = [
  el(0, 'heading', 'New order'),
  el(1, 'textbox', 'Reference', 'reference input'),
  el(2, 'textbox', 'Quantity', 'quantity input'),
  el(3, 'button', 'Place order'),
  el(4, 'textbox', 'E-mail address', 'email input'),
  el(5, 'button', 'Count clicks'),
  el(6, 'combobox', 'Country', 'country select'),
  el(7, 'link', 'Sign in', 'a', false),
];

describe('find: ranking elements against a description', () => {
  it.each([
    ['email field', 4],
    ['e-mail', 4],
    ['order reference', 1],
    ['qty', 2],
    ['place the order button', 3],
    ['country dropdown', 6],
    ['log in link', 7],
  ])('"%s" finds element %i first', (query, expected) => {
    expect(rankElements(query, page)[0]).toBe(expected);
  });

  it('answers a kind of element alone with the elements of that kind', () => {
    expect(rankElements('button', page)).toEqual([3, 5]);
  });

  it('leaves out what matches nothing, and weak matches far below the best', () => {
    expect(rankElements('rocket launcher', page)).toEqual([]);
    // "count" shares a prefix with "country", but a dropdown was asked for.
    expect(rankElements('country dropdown', page)).toEqual([6]);
  });
});

describe('find: ranking by where an element is', () => {
  const add = (i: number, section: string): FoundElement => ({ i, role: 'link', name: 'Add', context: 'a', inView: true, heading: section, region: `region ${section}`, href: `/${section.toLowerCase()}/new` });
  const office: FoundElement[] = [
    add(0, 'Customers'),
    add(1, 'Products'),
    add(2, 'Invoices'),
    { i: 3, role: 'button', name: 'Edit', context: 'button', inView: true, row: 'ACME', column: 'Actions' },
    { i: 4, role: 'button', name: 'Edit', context: 'button', inView: true, row: 'Globex', column: 'Actions' },
    { i: 5, role: 'textbox', name: '', context: 'text', inView: true, label: 'Amount' },
    { i: 6, role: 'textbox', name: 'Notes', context: 'text', inView: true, description: 'Shown on the invoice' },
    { i: 7, role: 'clickable', name: 'Text messages', context: 'div', inView: true },
    { i: 8, role: 'checkbox', name: 'Text messages', context: 'input', inView: true },
    { i: 9, role: 'form', name: 'Order', context: 'form', inView: true, heading: 'New order', region: 'main', regionRole: 'main' },
    { i: 10, role: 'combobox', name: 'Tags', context: 'input', inView: true, heading: 'New order', region: 'form Order', regionRole: 'form' },
    { i: 11, role: 'button', name: 'Create order', context: 'button submit', inView: true, heading: 'New order', region: 'form Order', regionRole: 'form' },
    // A grid's wrapper named by all its rows, then a cell of one of them.
    { i: 12, role: 'clickable', name: 'INV-0001 Customer 1 100 INV-0002 Customer 2 101 INV-0003 Customer 3 102 INV-0004 Customer 4', context: 'div', inView: true },
    { i: 13, role: 'gridcell', name: 'Customer 3', context: 'div', inView: true, row: 'INV-0003', column: 'Customer' },
  ];

  it.each([
    ['add invoice link', 2],
    ['add product', 1],
    ['edit Globex', 4],
    ['amount field', 5],
    ['invoice remark field', 6],
    ['text messages', 8],
    ['tags in the order form', 10],
    ['order form submit', 11],
    ['order form', 9],
    ['customer of INV-0003', 13],
  ])('"%s" finds element %i first', (query, expected) => {
    expect(rankElements(query, office)[0]).toBe(expected);
  });
});

describe('find: a block editor admin', () => {
  const editor: FoundElement[] = [
    { i: 0, role: 'link', name: 'Posts', context: 'a', inView: true, region: 'navigation "Main menu"', regionRole: 'navigation' },
    // A fly-out submenu item parked off the page until its menu is hovered: it cannot be clicked.
    { i: 1, role: 'link', name: 'Add New', context: 'a', inView: false, unreachable: true, region: 'navigation "Main menu"', regionRole: 'navigation' },
    { i: 2, role: 'button', name: 'Post', context: 'button', inView: true },
    { i: 3, role: 'heading', name: 'Post', context: 'h2', inView: true },
    { i: 4, role: 'link', name: 'Add New', context: 'a', inView: true, heading: 'Posts' },
    { i: 5, role: 'textbox', name: 'Add title', context: 'h1', inView: true },
    { i: 6, role: 'document', name: 'Empty block; start writing or type forward slash to choose a block', context: 'p', inView: true },
  ];

  it('never ranks an element that cannot be brought into view above one that can', () => {
    const ranked = rankElements('Add New', editor);
    expect(ranked[0]).toBe(4);
    expect(ranked.indexOf(1)).toBeGreaterThan(ranked.indexOf(4));
  });

  it('ranks a field named by its placeholder first for a description of it', () => {
    expect(rankElements('Post title field', editor)[0]).toBe(5);
  });
});
