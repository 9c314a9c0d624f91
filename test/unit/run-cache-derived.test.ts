/**
 * A value the model wrote itself is never replayed with the earlier input's values
 * (docs/run-cache.md#values-from-the-input): whatever function of the input it was computed by —
 * words reversed, case, separators, initials, a locale's number or date format, values joined,
 * any other — the cached action that enters it is guarded on every input value it did not enter
 * by name, so a change at any of them stops the replay there. A literal with the same input, and
 * an action that enters no value (a click on "Save", a key), still replays.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { placeholderOf } from '../../src/domain/input-references.js';
import { pathId, withValueAt } from '../../src/contract/key-path.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { guardHolds, inputLeaves, tieAction, type TieContext } from '../../src/run-cache/values.js';

type Leaf = string | number;

const word = fc.stringMatching(/^[A-Z][a-z]{1,8}$/);
const isoDate = fc.date({ min: new Date('1950-01-01T00:00:00Z'), max: new Date('2080-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
const leafValue: fc.Arbitrary<Leaf> = fc.oneof(
  fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => w.join(' ')),
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }),
  isoDate,
  fc.stringMatching(/^[A-Z]{2}\d{2,4}$/),
  fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/[{}]/.test(s)),
  fc.constantFrom('Kofi Mensah', 'Ghana', '2026-03-04', 1234.5, 'AB12'),
);
/** An input of text and number values, some nested. */
const input = fc
  .uniqueArray(fc.tuple(fc.array(fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/), { minLength: 1, maxLength: 2 }), leafValue), { minLength: 1, maxLength: 6, selector: ([p]) => p[0] })
  .map((pairs) => pairs.reduce<Record<string, unknown>>((root, [p, v]) => withValueAt(root, p, v) as Record<string, unknown>, {}));

const LOCALES = ['en-US', 'de-DE', 'fr-FR', 'en-GB', 'ja-JP', 'pt-BR', 'hi-IN'];
const words = (v: Leaf) => String(v).split(/\s+/).filter(Boolean);
const asDate = (v: Leaf) => (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? new Date(`${v}T00:00:00Z`) : undefined);

/** Ways a model may write what it read in the input, each a function of the values. */
const TRANSFORMS: Record<string, (values: Leaf[], i: number, j: number, locale: string) => string> = {
  reversed: (v, i) => words(v[i]!).reverse().join(' '),
  surnameFirst: (v, i) => { const w = words(v[i]!); return w.length > 1 ? `${w.at(-1)}, ${w.slice(0, -1).join(' ')}` : w.join(''); },
  upper: (v, i) => String(v[i]).toUpperCase(),
  lower: (v, i) => String(v[i]).toLowerCase(),
  joined: (v, i) => words(v[i]!).join(''),
  dotted: (v, i) => words(v[i]!).join('.').toLowerCase(),
  hyphenated: (v, i) => String(v[i]).replace(/(\D)(\d)/, '$1-$2'),
  initials: (v, i) => { const w = words(v[i]!); return `${w.slice(0, -1).map((x) => `${x[0]}.`).join(' ')} ${w.at(-1) ?? ''}`.trim(); },
  number: (v, i, _j, locale) => (typeof v[i] === 'number' ? new Intl.NumberFormat(locale, { minimumFractionDigits: 2 }).format(v[i] as number) : String(v[i]).split('').reverse().join('')),
  date: (v, i, _j, locale) => { const d = asDate(v[i]!); return d ? d.toLocaleDateString(locale, { dateStyle: 'long', timeZone: 'UTC' }) : String(v[i]).slice(0, 3); },
  shortDate: (v, i, _j, locale) => { const d = asDate(v[i]!); return d ? d.toLocaleDateString(locale, { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' }) : String(v[i]).slice(-3); },
  concatenated: (v, i, j) => `${String(v[i])} / ${String(v[j])}`,
  first: (v, i) => words(v[i]!)[0] ?? '',
  length: (v, i) => String(String(v[i]).length),
  constant: () => 'Deliver by hand',
};

const transform = fc.record({ kind: fc.constantFrom(...Object.keys(TRANSFORMS)), i: fc.nat(), j: fc.nat(), locale: fc.constantFrom(...LOCALES) });
/** How the literal is entered: typed (computer use, browser toolset) or set, alone or beside a name. */
const entry = fc.record({ tool: fc.constantFrom('type', 'form_input'), beside: fc.option(fc.nat(), { nil: undefined }) });

function context(value: unknown): TieContext {
  const vault = createSecretVault(value, undefined);
  return { input: vault, leaves: inputLeaves(vault), salt: 'fp' };
}

function tieLiteral(ctx: TieContext, text: string, how: { tool: string; beside: number | undefined }) {
  const leaves = ctx.leaves;
  const named = how.beside === undefined ? '' : `${placeholderOf(leaves[how.beside % leaves.length]!.path)} `;
  const key = how.tool === 'type' ? 'text' : 'value';
  return tieAction({ action: how.tool, input: { ...(how.tool === 'type' ? { action: 'type' } : {}), [key]: `${named}${text}` }, target: { role: 'textbox', name: 'Search' } }, ctx);
}

describe('a value the model wrote itself', () => {
  it('is never replayed unguarded when the input changes at any value it did not enter by name', () => {
    fc.assert(
      fc.property(input, transform, entry, fc.nat(), leafValue, (payload, t, how, pick, replacement) => {
        const ctx = context(payload);
        const values = ctx.leaves.map((l) => (l.kind === 'number' ? Number(l.value) : l.value));
        const text = TRANSFORMS[t.kind]!(values, t.i % values.length, t.j % values.length, t.locale);
        // Only spacing beside a name is not the model's writing (`{{first}} {{last}}`).
        fc.pre(how.beside === undefined || text.trim() !== '');
        const tied = tieLiteral(ctx, text, how);
        // The same input: the step replays.
        expect(tied.guard === undefined || guardHolds(tied.guard, context(structuredClone(payload)).leaves, 'fp')).toBe(true);
        const target = ctx.leaves[pick % ctx.leaves.length]!;
        fc.pre(String(replacement) !== target.value || typeof replacement !== target.kind);
        if (tied.refs.some((p) => pathId(p) === pathId(target.path))) return; // entered by name: the new value goes in
        const now = context(withValueAt(payload, target.path, replacement)).leaves;
        expect(tied.guard).toBeDefined();
        expect(guardHolds(tied.guard!, now, 'fp')).toBe(false);
        // The same text picked as a choice (an option, a radio, a box ticked) is the model's value too.
        for (const role of ['option', 'radio', 'checkbox']) {
          const picked = tieAction({ action: 'left_click', input: {}, target: { role, name: text } }, ctx);
          expect(picked.guard && !guardHolds(picked.guard, now, 'fp')).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a click on a named button or a key replays whatever the input, unless an input value names it', () => {
    fc.assert(
      fc.property(input, fc.nat(), leafValue, (payload, pick, replacement) => {
        const ctx = context(payload);
        fc.pre(ctx.leaves.every((l) => !['save', 'return'].includes(l.value.trim().toLowerCase())));
        const target = ctx.leaves[pick % ctx.leaves.length]!;
        const now = context(withValueAt(payload, target.path, replacement)).leaves;
        const click = tieAction({ action: 'left_click', input: { action: 'left_click', coordinate: [10, 20] }, target: { role: 'button', name: 'Save' } }, ctx);
        const key = tieAction({ action: 'key', input: { action: 'key', text: 'Return' }, focus: { role: 'textbox', name: '' } }, ctx);
        for (const tied of [click, key]) expect(tied.guard === undefined || guardHolds(tied.guard, now, 'fp')).toBe(true);
      }),
    );
  });
});

describe('the forms the recognisers miss', () => {
  const payload = { watcher: 'Kofi Mensah', amount: 1234.5, due: '2026-03-04', code: 'AB12', country: 'Ghana' };
  const changes: Record<string, unknown> = { watcher: 'Ama Owusu', amount: 99, due: '2027-01-15', code: 'ZZ99', country: 'Togo' };
  const from: Record<string, string> = {
    'Mensah, Kofi': 'watcher',
    'Mensah Kofi': 'watcher',
    KofiMensah: 'watcher',
    'kofi.mensah': 'watcher',
    'K. Mensah': 'watcher',
    '1.234,50': 'amount',
    'March 4, 2026': 'due',
    '4 Mar 2026': 'due',
    'AB-12': 'code',
  };

  it.each(Object.entries(from))('%s, typed, replays only while %s is the same', (text, field) => {
    const ctx = context(payload);
    for (const tool of ['type', 'form_input']) {
      const tied = tieAction({ action: tool, input: tool === 'type' ? { action: 'type', text } : { value: text } }, ctx);
      expect(tied.guard).toBeDefined();
      expect(guardHolds(tied.guard!, context({ ...payload }).leaves, 'fp')).toBe(true);
      expect(guardHolds(tied.guard!, context({ ...payload, [field]: changes[field] }).leaves, 'fp')).toBe(false);
    }
  });

  it('names the values it most likely came from, and keeps the values it entered by name out of its guard', () => {
    const ctx = context(payload);
    const tied = tieAction({ action: 'type', input: { action: 'type', text: 'Kofi' } }, ctx);
    expect(tied.guard).toMatchObject({ why: 'derived', from: [['watcher']] });
    const letter = tieAction({ action: 'type', input: { action: 'type', text: 'Dear {{watcher}}, your {{code}} order' } }, ctx);
    expect(letter.refs).toEqual([['watcher'], ['code']]);
    expect(letter.guard?.why).toBe('literal');
    expect(letter.guard?.paths.map(pathId).sort()).toEqual([['amount'], ['country'], ['due']].map(pathId).sort());
    expect(guardHolds(letter.guard!, context({ ...payload, watcher: 'Ama Owusu', code: 'ZZ99' }).leaves, 'fp')).toBe(true);
    // Names alone, spacing between them aside, are the input's: nothing to guard.
    expect(tieAction({ action: 'type', input: { action: 'type', text: '{{watcher}} {{code}}' } }, ctx).guard).toBeUndefined();
  });
});
