import { describe, expect, it } from 'vitest';
import { cacheFingerprint, pageShape, parseCacheEntry, samePage, RUN_CACHE_FORMAT } from '../../src/run-cache/format.js';
import { startingStep } from '../../src/run-cache/replay.js';
import { fillValues, guardHolds, inputLeaves, relatedPaths, templateText, templateValue, tieAction, type TieContext } from '../../src/run-cache/values.js';

describe('run cache rules', () => {
  it('keeps a page by origin, path and the names of its query parameters', () => {
    expect(pageShape('https://shop.test/orders?id=17&sort=asc')).toBe('https://shop.test/orders?id&sort');
    expect(pageShape('https://shop.test/orders?sort=desc&id=18#top')).toBe('https://shop.test/orders?id&sort');
    expect(pageShape('https://shop.test/orders')).not.toBe(pageShape('https://shop.test/order'));
  });

  it('turns input values into their paths, longest first, secrets left as their placeholders', () => {
    const values = inputLeaves({ user: 'ann', password: '{{password}}', customer: { name: 'ACME Ltd', city: 'Lyon' }, n: 42, flag: true, x: 'a' });
    expect(values.map((v) => v.path)).toEqual(['customer.name', 'customer.city', 'flag', 'user', 'n', 'x']);
    expect(templateText('ann', values)).toBe('{{user}}');
    expect(templateText('Order for ACME Ltd in Lyon', values)).toBe('Order for {{customer.name}} in {{customer.city}}');
    // A short value is only taken whole: "ann" inside "Annual" stays.
    expect(templateText('Annual report of ann', values)).toBe('Annual report of ann');
    expect(templateValue({ value: 'ACME Ltd', nested: ['Lyon', 42] }, values)).toEqual({ value: '{{customer.name}}', nested: ['{{customer.city}}', 42] });
  });

  it('fills paths with the new input, and leaves secrets and unknown paths as placeholders', () => {
    const input = { user: 'bob', password: '{{password}}', customer: { name: 'Globex' } };
    expect(fillValues({ a: '{{user}}', b: 'for {{customer.name}}', c: '{{password}}', d: '{{nowhere}}' }, input, ['password'])).toEqual({ ok: true, value: { a: 'bob', b: 'for Globex', c: '{{password}}', d: '{{nowhere}}' } });
  });

  it('fingerprints what shapes a run: the prompt, the allow-list, the action space', () => {
    const spec = { prompt: 'Order', allowedDomains: ['shop.test'] };
    const base = cacheFingerprint(spec, 'browser_toolset_20260801');
    expect(cacheFingerprint({ ...spec }, 'browser_toolset_20260801')).toBe(base);
    expect(cacheFingerprint({ ...spec, prompt: 'Order now' }, 'browser_toolset_20260801')).not.toBe(base);
    expect(cacheFingerprint({ ...spec, allowedDomains: ['other.test'] }, 'browser_toolset_20260801')).not.toBe(base);
    expect(cacheFingerprint(spec, 'computer_toolset_20260801')).not.toBe(base);
    // Limits are not the run's shape.
    expect(cacheFingerprint({ ...spec, maxSteps: 5, timeoutMs: 1000 }, 'browser_toolset_20260801')).toBe(base);
  });

  it('reads only entries of its own format', () => {
    const entry = { format: RUN_CACHE_FORMAT, versionId: 'v', fingerprint: 'f', toolType: 't', createdAt: '', sourceExecutionId: 'e', steps: [[{ tool: 'x', input: {}, page: 'p' }]] };
    expect(parseCacheEntry(entry)).toEqual(entry);
    expect(parseCacheEntry({ ...entry, format: 'other' })).toBeUndefined();
    expect(parseCacheEntry({ ...entry, steps: [[{ input: {} }]] })).toBeUndefined();
    expect(parseCacheEntry('nonsense')).toBeUndefined();
  });

  it('compares pages by shape, with the numbers of their path (record ids) set aside', () => {
    expect(samePage('https://app.test/invoice/1042', 'https://app.test/invoice/1077')).toBe(true);
    expect(samePage('https://app.test/invoice/1042', 'https://app.test/invoices')).toBe(false);
    expect(samePage('https://app.test/invoice/1042', 'https://other.test/invoice/1042')).toBe(false);
  });
});

describe('values from the input', () => {
  const old = { paid: true, amount: 7, code: 'A', currency: 'EUR', due: '2026-03-04', quantity: '2', copies: '2', tier: '1', note: 'Deliver to the back door', secret: '{{secret}}' };
  const ctx: TieContext = { leaves: inputLeaves(old), specText: 'Save the invoice with Priority 1.', salt: 'fp' };
  const form = (value: unknown, role = 'textbox') => tieAction({ action: 'form_input', input: { target: { type: 'ref' }, value }, target: { role, name: 'Field', tag: 'input' } }, ctx);

  it('ties every value that equals one input value to its path, whatever its type or length', () => {
    expect(form(true, 'checkbox')).toEqual({ input: { target: { type: 'ref' }, value: { $input: 'paid', as: 'boolean' } }, target: { role: 'checkbox', name: 'Field', tag: 'input' } });
    expect(form(7).input.value).toEqual({ $input: 'amount', as: 'number' });
    expect(form('7').input.value).toEqual({ $input: 'amount', as: 'string' });
    expect(form('A').input.value).toEqual({ $input: 'code', as: 'string' });
    expect(form('EUR', 'combobox').input.value).toEqual({ $input: 'currency', as: 'string' });
    expect(form('2026-03-04').input.value).toEqual({ $input: 'due', as: 'string' });
    for (const value of [true, 7, '7', 'A', 'EUR', '2026-03-04']) expect(form(value).guard).toBeUndefined();
    const fresh = { ...old, paid: false, amount: 9, code: 'B', currency: 'USD', due: '2026-05-06' };
    expect(fillValues(form(true).input, fresh, [])).toEqual({ ok: true, value: { target: { type: 'ref' }, value: false } });
    expect(fillValues(form(7).input.value, fresh, [])).toEqual({ ok: true, value: 9 });
    expect(fillValues(form('A').input.value, fresh, [])).toEqual({ ok: true, value: 'B' });
    expect(fillValues(form('A').input.value, { ...fresh, code: undefined }, [])).toEqual({ ok: false, reason: 'the new input has no value at code' });
  });

  it('guards what cannot be tied to one path: repeated values, literals of the specification, values written otherwise', () => {
    const several = form('2');
    expect(several.guard).toMatchObject({ paths: ['copies', 'quantity'], why: 'several' });
    expect(form('1').guard).toMatchObject({ paths: ['tier'], why: 'prompt' });
    expect(form('04/03/2026').guard).toMatchObject({ paths: ['due'], why: 'literal' });
    expect(form('7.00').guard).toMatchObject({ paths: ['amount'], why: 'literal' });
    expect(form('yes', 'checkbox').guard).toMatchObject({ paths: ['paid'], why: 'literal' });
    expect(form('Code A please').guard).toMatchObject({ paths: ['code'], why: 'literal' });
    // A long value inside a text is templated; the rest of the text is free of input values.
    expect(form('Note: Deliver to the back door').input.value).toBe('Note: {{note}}');
    expect(form('Note: Deliver to the back door').guard).toBeUndefined();
    // A click that toggles a checkbox depends on the input's yes/no values ("1" is one).
    expect(tieAction({ action: 'left_click', input: { coordinate: [1, 2] }, target: { role: 'checkbox', name: 'Paid', tag: 'input' } }, ctx).guard).toMatchObject({ paths: ['paid', 'tier'], why: 'toggle' });
    // A guard holds only when the new input has the same values there.
    expect(guardHolds(several.guard!, old, 'fp')).toBe(true);
    expect(guardHolds(several.guard!, { ...old, quantity: '3', copies: '3' }, 'fp')).toBe(false);
    expect(guardHolds(several.guard!, { ...old, note: 'other' }, 'fp')).toBe(true);
    expect(guardHolds(several.guard!, old, 'another fingerprint')).toBe(false);
  });

  it('finds the input values a literal may have been written from', () => {
    const leaves = inputLeaves({ due: '2026-03-04', total: 1234.5, code: 'x' });
    expect(relatedPaths('March 4, 2026', leaves)).toEqual([]);
    expect(relatedPaths('4.3.26', leaves)).toEqual(['due']);
    expect(relatedPaths('1,234.50', leaves)).toEqual(['total']);
    // A date picker's day or year, clicked by its name.
    expect(relatedPaths('4', leaves)).toEqual(['due']);
    expect(relatedPaths('2026', leaves)).toEqual(['due']);
    expect(relatedPaths('5', leaves)).toEqual([]);
    expect(relatedPaths('Box X', leaves)).toEqual(['code']);
    expect(relatedPaths('Boxes', leaves)).toEqual([]);
  });

  it('starts a replay past pages already passed only when they set no value but a sign-in', () => {
    const at = (page: string, tool: string, input: Record<string, unknown> = {}) => ({ tool, toolsetName: 'browser', input, page: `https://app.test${page}` });
    const signIn = [at('/', 'form_input', { value: { $input: 'user', as: 'string' } }), at('/', 'form_input', { value: '{{password}}' }), at('/', 'left_click')];
    const list = [at('/invoices', 'left_click')];
    const form = [at('/invoice/1042', 'form_input', { value: { $input: 'amount', as: 'number' } })];
    expect(startingStep([signIn, list, form], 'https://app.test/', ['password'])).toBe(0);
    expect(startingStep([signIn, list, form], 'https://app.test/invoices', ['password'])).toBe(1);
    expect(startingStep([signIn, list, form], 'https://app.test/invoice/1077', ['password'])).toBe(2);
    // Without a secret the first page is no sign-in: its values are the record's, never passed over.
    expect(startingStep([signIn, list, form], 'https://app.test/invoices', [])).toBe(0);
    expect(startingStep([list, form, signIn], 'https://app.test/elsewhere', ['password'])).toBe(0);
  });
});
