import { describe, expect, it } from 'vitest';
import { pathId } from '../../src/contract/key-path.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { afterLastEntry } from '../../src/run-cache/actions.js';
import { buildEntry } from '../../src/run-cache/entry.js';
import { cacheFingerprint, pageShape, parseCacheEntry, samePage } from '../../src/run-cache/format.js';
import { startingStep } from '../../src/run-cache/replay.js';
import { changedPaths, derivedPaths, guardHolds, inputDigests, inputLeaves, tieAction, type TieContext } from '../../src/run-cache/values.js';
import { RUN_CACHE_FORMAT, type CachedAction } from '../../src/contract/run-cache.js';

describe('run cache rules', () => {
  it('keeps a page by origin, path and the names of its query parameters', () => {
    expect(pageShape('https://shop.test/orders?id=17&sort=asc')).toBe('https://shop.test/orders?id&sort');
    expect(pageShape('https://shop.test/orders?sort=desc&id=18#top')).toBe('https://shop.test/orders?id&sort');
    expect(pageShape('https://shop.test/orders')).not.toBe(pageShape('https://shop.test/order'));
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

  it('reads only entries of its own format and shape', () => {
    const entry = { format: RUN_CACHE_FORMAT, versionId: 'v', fingerprint: 'f', toolType: 't', createdAt: '', sourceExecutionId: 'e', steps: [[{ tool: 'x', input: {}, page: 'p', refs: [['a', 'b.c']] }]], input: [{ path: ['a', 'b.c'], digest: 'd' }] };
    expect(parseCacheEntry(entry)).toEqual(entry);
    expect(parseCacheEntry({ ...entry, format: 'execution-worker/run-cache@2' })).toBeUndefined();
    expect(parseCacheEntry({ ...entry, steps: [[{ input: {} }]] })).toBeUndefined();
    // Paths are arrays of keys: a dotted string is not one.
    expect(parseCacheEntry({ ...entry, steps: [[{ tool: 'x', input: {}, page: 'p', refs: ['a.b'] }]] })).toBeUndefined();
    expect(parseCacheEntry({ ...entry, input: [{ path: 'a.b', digest: 'd' }] })).toBeUndefined();
    expect(parseCacheEntry({ ...entry, steps: [[{ tool: 'x', input: {}, page: 'p', guard: { paths: [['a']], digest: 'd', why: 'tie' } }]] })).toBeUndefined();
    expect(parseCacheEntry('nonsense')).toBeUndefined();
  });

  it('compares pages by shape, with the numbers of their path (record ids) set aside', () => {
    expect(samePage('https://app.test/invoice/1042', 'https://app.test/invoice/1077')).toBe(true);
    expect(samePage('https://app.test/invoice/1042', 'https://app.test/invoices')).toBe(false);
    expect(samePage('https://app.test/invoice/1042', 'https://other.test/invoice/1042')).toBe(false);
  });
});

describe('values from the input', () => {
  const schema = { type: 'object', properties: { secret: { type: 'string', writeOnly: true } } };
  const old = { paid: true, amount: 7, code: 'A', currency: 'EUR', due: '2026-03-04', quantity: '2', copies: '2', watcher: 'Kofi Mensah', note: 'Deliver to the back door', secret: 's3cret-value' };
  const vault = createSecretVault(old, schema);
  const ctx: TieContext = { input: vault, leaves: inputLeaves(vault), salt: 'fp' };
  const form = (value: unknown, role = 'textbox', name = 'Field') => tieAction({ action: 'form_input', input: { target: { type: 'ref' }, value }, target: { role, name } }, ctx);

  it('ties a value to an input path only when the model entered it by name', () => {
    expect(form('{{paid}}', 'checkbox')).toEqual({ refs: [['paid']] });
    expect(form('{{amount}}')).toEqual({ refs: [['amount']] });
    // Text around names is the model's own: guarded on the values it did not enter by name.
    const letter = form('Dear {{watcher}}, see {{note}}');
    expect(letter).toMatchObject({ refs: [['watcher'], ['note']], guard: { why: 'literal' } });
    expect(letter.guard?.paths).not.toContainEqual(['watcher']);
    expect(form('{{watcher}} {{note}}')).toEqual({ refs: [['watcher'], ['note']] });
    // A secret is entered by name too; a name of nothing is a literal.
    expect(form('{{secret}}')).toEqual({ refs: [['secret']] });
    expect(form('{{nowhere}}').refs).toEqual([]);
  });

  it('never ties a literal, whatever it equals: it guards every value it did not enter by name, naming those it may come from', () => {
    const every = new Set(inputLeaves(vault).map((l) => pathId(l.path)));
    const guarded = (tied: ReturnType<typeof form>) => new Set(tied.guard?.paths.map(pathId));
    // A tick is never the input's boolean by equality: any value of the input may have decided it, the yes/no ones most likely.
    expect(form(true, 'checkbox')).toMatchObject({ refs: [], guard: { from: [['paid']], why: 'derived' } });
    expect(guarded(form(true, 'checkbox'))).toEqual(every);
    expect(form(7).guard).toMatchObject({ from: [['amount']], why: 'derived' });
    expect(guarded(form(7))).toEqual(every);
    expect(form('EUR', 'combobox').guard).toMatchObject({ from: [['currency']] });
    expect(form('2').guard).toMatchObject({ from: [['copies'], ['quantity']] });
    expect(form('04/03/2026').guard).toMatchObject({ from: [['due']] });
    expect(form('7.00').guard).toMatchObject({ from: [['amount']] });
    expect(form('yes', 'checkbox').guard).toMatchObject({ from: [['paid']] });
    // A piece of an input value: a first name typed into a search.
    expect(form('Kofi').guard).toMatchObject({ from: [['watcher']] });
    expect(form('Mens').guard).toMatchObject({ from: [['watcher']] });
    // Text that recalls no input value is guarded all the same: the model may have computed it from any.
    expect(form('Deliver by hand').guard?.why).toBe('literal');
    expect(guarded(form('Deliver by hand'))).toEqual(every);
    expect(form('Deliver by hand').guard?.from).toBeUndefined();
    // A key or a URL is not a value entered: guarded only where it recalls an input value.
    expect(tieAction({ action: 'key', input: { action: 'key', text: 'Return' } }, ctx).guard).toBeUndefined();
    expect(tieAction({ action: 'navigate', input: { url: 'https://app.test/people?q=Kofi%20Mensah' } }, ctx).guard).toMatchObject({ paths: [['watcher']], why: 'derived' });
    // A click on an element named like an input value is guarded, never tied; a toggle depends on yes/no values.
    expect(tieAction({ action: 'left_click', input: {}, target: { role: 'link', name: 'Kofi Mensah' } }, ctx).guard).toMatchObject({ paths: [['watcher']], why: 'named' });
    expect(tieAction({ action: 'left_click', input: {}, target: { role: 'button', name: 'Create' } }, ctx).guard).toBeUndefined();
    // A click that picks a choice or ticks a box enters a value of the model's own: guarded on every value, its likely sources named.
    const option = tieAction({ action: 'left_click', input: {}, target: { role: 'option', name: 'Kofi Mensah' } }, ctx);
    expect(option.guard).toMatchObject({ from: [['watcher']], why: 'named' });
    expect(guarded(option)).toEqual(every);
    const tick = tieAction({ action: 'left_click', input: { coordinate: [1, 2] }, target: { role: 'checkbox', name: 'Urgent' } }, ctx);
    expect(tick.guard).toMatchObject({ from: [['paid']], why: 'toggle' });
    expect(guarded(tick)).toEqual(every);
    expect(tieAction({ action: 'left_click', input: {}, target: { role: 'radio', name: 'Express' } }, ctx).guard?.why).toBe('literal');
  });

  it('holds a guard only while the new input has the same values there, under the same salt', () => {
    const guard = form('2').guard!;
    const leaves = (input: Record<string, unknown>) => inputLeaves(createSecretVault(input, schema));
    expect(guardHolds(guard, leaves(old), 'fp')).toBe(true);
    expect(guardHolds(guard, leaves({ ...old, quantity: '3', copies: '3' }), 'fp')).toBe(false);
    // A literal entered depends on every value: an unrelated one changed stops it too; a secret is never compared.
    expect(guardHolds(guard, leaves({ ...old, note: 'other' }), 'fp')).toBe(false);
    expect(guardHolds(guard, leaves({ ...old, secret: 'other' }), 'fp')).toBe(true);
    expect(guardHolds(guard, leaves(old), 'another fingerprint')).toBe(false);
    // A click named like a value depends on that value only.
    const named = tieAction({ action: 'left_click', input: {}, target: { role: 'link', name: 'Kofi Mensah' } }, ctx).guard!;
    expect(guardHolds(named, leaves({ ...old, note: 'other' }), 'fp')).toBe(true);
    expect(guardHolds(named, leaves({ ...old, watcher: 'Ama Owusu' }), 'fp')).toBe(false);
  });

  it('finds the input values a literal may have been written from', () => {
    const leaves = inputLeaves({ maskedPayload: { due: '2026-03-04', total: 1234.5, code: 'x', name: 'Ama Owusu' }, paths: [] });
    expect(derivedPaths('March 4, 2026', leaves)).toEqual([]);
    expect(derivedPaths('4.3.26', leaves)).toEqual([['due']]);
    expect(derivedPaths('1,234.50', leaves)).toEqual([['total']]);
    expect(derivedPaths('4', leaves)).toEqual([['due']]);
    expect(derivedPaths('5', leaves)).toEqual([]);
    expect(derivedPaths('Box X', leaves)).toEqual([['code']]);
    expect(derivedPaths('Boxes', leaves)).toEqual([]);
    expect(derivedPaths('Ama', leaves)).toEqual([['name']]);
    expect(derivedPaths('Am', leaves)).toEqual([]);
    expect(derivedPaths('https://app.test/people?q=Ama%20Owusu', leaves)).toEqual([['name']]);
    expect(derivedPaths('Ama', leaves, { pieces: false })).toEqual([]);
  });

  it('knows which input values changed since the cached run, secrets left out', () => {
    const digests = inputDigests(inputLeaves(vault), 'fp');
    expect(digests.map((d) => d.path)).not.toContainEqual(['secret']);
    expect(JSON.stringify(digests)).not.toContain('Kofi');
    const now = (input: Record<string, unknown>) => inputLeaves(createSecretVault(input, schema));
    expect(changedPaths(digests, now({ ...old, secret: 'other secret' }), 'fp')).toEqual([]);
    const { note: _gone, ...withoutNote } = old;
    expect(changedPaths(digests, now({ ...withoutNote, code: 'B', extra: 1 }), 'fp')).toEqual([['code'], ['extra'], ['note']]);
  });

  it('builds an entry whose values are names, and the digests of its input', () => {
    const trace = (value: unknown, name: string) => ({ tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref', ref: 'ref_4' }, value }, url: 'https://app.test/form?x=1', target: { role: 'textbox', name, tag: 'input' } });
    const entry = buildEntry({ versionId: 'v', fingerprint: 'fp', toolType: 't', executionId: 'e', now: () => 0, input: vault, steps: [[trace('{{watcher}}', 'Watcher'), trace('{{secret}}', 'Password')]] });
    expect(entry.steps[0]).toEqual([
      { tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref' }, value: '{{watcher}}' }, page: 'https://app.test/form?x', target: { role: 'textbox', name: 'Watcher', tag: 'input' }, refs: [['watcher']] },
      { tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref' }, value: '{{secret}}' }, page: 'https://app.test/form?x', target: { role: 'textbox', name: 'Password', tag: 'input' }, refs: [['secret']] },
    ]);
    expect(parseCacheEntry(JSON.parse(JSON.stringify(entry)))).toEqual(entry);
    expect(JSON.stringify(entry)).not.toMatch(/Kofi|s3cret/);
  });

  it('starts a replay past pages already passed only when they set no value but a sign-in', () => {
    const input = createSecretVault({ user: 'ann', password: 'pw', amount: 7 }, { type: 'object', properties: { password: { type: 'string', writeOnly: true } } });
    const at = (page: string, tool: string, extra: Partial<CachedAction> = {}): CachedAction => ({ tool, toolsetName: 'browser', input: {}, page: `https://app.test${page}`, ...extra });
    const signIn = [at('/', 'form_input', { refs: [['user']] }), at('/', 'form_input', { refs: [['password']] }), at('/', 'left_click')];
    const list = [at('/invoices', 'left_click')];
    const form = [at('/invoice/1042', 'form_input', { refs: [['amount']] })];
    expect(startingStep([signIn, list, form], 'https://app.test/', input)).toBe(0);
    expect(startingStep([signIn, list, form], 'https://app.test/invoices', input)).toBe(1);
    expect(startingStep([signIn, list, form], 'https://app.test/invoice/1077', input)).toBe(2);
    // Without a secret the first page is no sign-in: its values are the record's, never passed over.
    const noSecret = createSecretVault({ user: 'ann', password: 'pw', amount: 7 }, undefined);
    expect(startingStep([signIn, list, form], 'https://app.test/invoices', noSecret)).toBe(0);
    expect(startingStep([list, form, signIn], 'https://app.test/elsewhere', input)).toBe(0);
  });

  it('hands values the cached run never entered to the model right after its last value entered', () => {
    const at = (tool: string, extra: Partial<CachedAction> = {}): CachedAction => ({ tool, toolsetName: 'browser', input: {}, page: 'https://app.test/', ...extra });
    const fill = at('form_input', { input: { value: '{{a}}' } });
    const save = at('left_click', { target: { role: 'button', name: 'Save', tag: 'button' } });
    const tick = at('left_click', { target: { role: 'checkbox', name: 'Urgent', tag: 'input' } });
    expect(afterLastEntry([[at('navigate')], [fill, fill, save], [at('get_page_text')]])).toEqual({ step: 1, action: 2 });
    expect(afterLastEntry([[fill, tick], [save]])).toEqual({ step: 1, action: 0 });
    expect(afterLastEntry([[save], [fill]])).toEqual({ step: 1, action: 0 });
    expect(afterLastEntry([[save], [save]])).toEqual({ step: 0, action: 0 });
  });
});
