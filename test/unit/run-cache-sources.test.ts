import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runCacheEntry, type ValueSource } from '../../src/contract/run-cache.js';
import { deriveValue, derivationsOf } from '../../src/run-cache/derive.js';
import { recordView } from '../../src/run-cache/record-view.js';
import { bindAction, fillPattern, piecesNotEntered, resolveSources, sourceOfText, sourcePaths, type SourceContext } from '../../src/run-cache/sources.js';
import { inputLeaves, tieAction } from '../../src/run-cache/values.js';
import { mayForceToolChoice } from '../../src/model/tool-choice.js';
import { checkRequestShape } from '../support/fake-api-rules.js';

const PROMPT = 'Sign in to the admin as "clerk", then create the invoice and open it.';

function ctxOf(payload: Record<string, unknown>, constants = PROMPT): SourceContext & { tie: Parameters<typeof tieAction>[1] } {
  const input = { maskedPayload: payload, paths: [] as string[] };
  const leaves = inputLeaves(input);
  return { payload, leaves, constants, tie: { input, leaves, salt: 'salt' } };
}

describe('sources of the values a cached action entered', () => {
  it('binds the prompt\'s user name as a constant of the version, with no guard', () => {
    const ctx = ctxOf({ vendor: 'Cobalt Software Ltd', notes: 'Net 30' });
    const bound = bindAction({ action: 'form_input', input: { value: 'clerk' }, target: { role: 'textbox', name: 'Username' } }, ctx, true);
    expect(bound.sources).toEqual([{ at: 'value', source: { kind: 'constant', text: 'clerk' } }]);
    const tied = tieAction({ action: 'form_input', input: bound.input, target: { role: 'textbox', name: 'Username' } }, ctx.tie, { keys: new Set(['value']), target: false });
    expect(tied.guard).toBeUndefined();
  });

  it('leaves a literal of the prompt that an input value also holds unbound, and guarded', () => {
    const ctx = ctxOf({ vendor: 'clerk and sons' });
    expect(sourceOfText('clerk', ctx)).toBeUndefined();
    const tied = tieAction({ action: 'form_input', input: { value: 'clerk' } }, ctx.tie);
    expect(tied.guard?.why).toBeDefined();
  });

  it('derives a first name, a prefix, a case change, a paragraph, a number and a date from exactly one input value', () => {
    const ctx = ctxOf({ watcher: 'Kofi Mensah', amount: 1234.5, due: '2026-03-04', notes: 'First para.\n\nSecond para.', code: 'ab-12' });
    expect(sourceOfText('Kofi', ctx)).toEqual([{ kind: 'derived', path: ['watcher'], derivation: { how: 'word', index: 0 } }]);
    expect(sourceOfText('Kof', ctx)).toEqual([{ kind: 'derived', path: ['watcher'], derivation: { how: 'prefix', length: 3 } }]);
    expect(sourceOfText('AB-12', ctx)).toEqual([{ kind: 'derived', path: ['code'], derivation: { how: 'case', to: 'upper' } }]);
    expect(sourceOfText('Second para.', ctx)).toEqual([{ kind: 'derived', path: ['notes'], derivation: { how: 'piece', unit: 'paragraph', index: 1 } }]);
    expect(sourceOfText('1,234.50', ctx)).toEqual([{ kind: 'derived', path: ['amount'], derivation: { how: 'number', decimals: 2, group: ',', point: '.', before: '', after: '' } }]);
    expect(sourceOfText('March 4, 2026', ctx)).toEqual([{ kind: 'derived', path: ['due'], derivation: { how: 'date', format: 'MMMM D, YYYY' } }]);
  });

  it('binds no derivation that two values give, nor a literal shorter than 3 characters', () => {
    const ctx = ctxOf({ watcher: 'Kofi Mensah', reporter: 'Kofi Boateng', tier: '1' });
    expect(sourceOfText('Kofi', ctx)).toBeUndefined();
    expect(sourceOfText('1', ctx)).toBeUndefined();
  });

  it('takes a derived value out of the cached input and computes it from the new input', () => {
    const ctx = ctxOf({ watcher: 'Kofi Mensah' });
    const bound = bindAction({ action: 'type', input: { text: 'Kofi' } }, ctx, true);
    expect(bound.input).toEqual({});
    expect(JSON.stringify(bound)).not.toContain('Kofi"');
    expect(resolveSources(bound.input, bound.sources, { watcher: 'Yaw Boateng' })).toEqual({ ok: true, input: { text: 'Yaw' } });
    expect(resolveSources(bound.input, bound.sources, { watcher: 'Yaw' })).toMatchObject({ ok: false });
    expect(resolveSources(bound.input, bound.sources, { watcher: 'Ama {{password}} Owusu' })).toMatchObject({ ok: true, input: { text: 'Ama' } });
    expect(resolveSources(bound.input, bound.sources, { watcher: '{{password}} Owusu' })).toMatchObject({ ok: false });
  });

  it('binds an upload by the input path of its file, never by its name', () => {
    const ctx = ctxOf({ invoice: { $file: 'march.pdf' }, vendor: 'Cobalt' });
    const bound = bindAction({ action: 'file_upload', input: { paths: ['march.pdf'] } }, ctx, true);
    expect(bound.sources).toEqual([{ at: 'paths', source: { kind: 'file', paths: [['invoice']] } }]);
    expect(bound.input).toEqual({});
    expect(resolveSources(bound.input, bound.sources, { invoice: { $file: 'april.pdf' } })).toEqual({ ok: true, input: { paths: ['april.pdf'] } });
  });

  it('keeps a link named after the input as a name pattern, and fills it with the next input', () => {
    const ctx = ctxOf({ number: 5, vendor: 'Cobalt Software Ltd', amount: 12 });
    const bound = bindAction({ action: 'left_click', input: {}, target: { role: 'link', name: 'Invoice #5 from Cobalt Software Ltd' } }, ctx, false);
    const pattern = bound.sources.find((b) => b.at === 'target')!.source as Extract<ValueSource, { kind: 'pattern' }>;
    expect(pattern.parts).toEqual([{ text: 'Invoice #' }, { path: ['number'] }, { text: ' from ' }, { path: ['vendor'] }]);
    expect(fillPattern(pattern.parts, { number: 6, vendor: 'Nordwind GmbH' })).toBe('Invoice #6 from Nordwind GmbH');
    const tied = tieAction({ action: 'left_click', input: {}, target: { role: 'link', name: 'Invoice #5 from Cobalt Software Ltd' } }, ctx.tie, { keys: new Set(), target: true });
    expect(tied.guard).toBeUndefined();
  });

  it('tells which pieces of a value entered piece by piece a run does not enter', () => {
    const actions = [0, 1].map((index) => ({ sources: [{ at: 'text' as const, source: { kind: 'derived' as const, path: ['body'], derivation: { how: 'piece' as const, unit: 'paragraph' as const, index } } }] }));
    expect(piecesNotEntered(actions, { body: 'a\n\nb\n\nc' })).toEqual([{ path: ['body'], unit: 'paragraph', index: 2 }]);
    expect(piecesNotEntered(actions, { body: 'a\n\nb' })).toEqual([]);
  });

  it('refuses an entry whose derived source leaves the earlier literal in the input', () => {
    const entry = { format: 'execution-worker/run-cache@4', versionId: 'v', fingerprint: 'f', toolType: 't', createdAt: 'now', sourceExecutionId: 'e', input: [], steps: [[{ tool: 'type', input: { text: 'Kofi' }, page: 'p', sources: [{ at: 'text', source: { kind: 'derived', path: ['watcher'], derivation: { how: 'word', index: 0 } } }] }]] };
    expect(runCacheEntry.safeParse(entry).success).toBe(false);
    expect(runCacheEntry.safeParse({ ...entry, steps: [[{ ...entry.steps[0]![0]!, input: {} }]] }).success).toBe(true);
  });
});

describe('sources, over generated inputs that share text with the prompt and with each other', () => {
  const word = fc.constantFrom('clerk', 'Cobalt', 'Software', 'Ltd', 'Kofi', 'Mensah', 'invoice', 'admin', 'Net', '30', 'open');
  const value = fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
  const input = fc.dictionary(fc.constantFrom('vendor', 'watcher', 'notes', 'user', 'ref'), value, { minKeys: 1 });
  const literal = fc.oneof(word, value, value.map((v) => v.toUpperCase()), value.map((v) => v.slice(0, 4)));

  it('never binds a literal to two sources, and a bound literal is what its one source gives', () => {
    const seen = { constant: 0, derived: 0 };
    fc.assert(
      fc.property(input, literal, (payload, text) => {
        const ctx = ctxOf(payload);
        const sources = sourceOfText(text, ctx);
        if (!sources) return;
        expect(sources).toHaveLength(1);
        const source = sources[0]!;
        if (source.kind === 'constant' || source.kind === 'derived') seen[source.kind]++;
        if (source.kind === 'constant') {
          expect(PROMPT).toContain(text.trim());
          for (const v of Object.values(payload)) expect(v.toLowerCase()).not.toContain(text.toLowerCase());
        } else if (source.kind === 'derived') {
          expect(PROMPT.includes(text.trim())).toBe(false);
          expect(deriveValue(String(payload[source.path[0]!]), source.derivation)).toBe(text);
          const others = Object.entries(payload).filter(([k]) => k !== source.path[0]);
          for (const [, v] of others) expect(derivationsOf(v, text)).toEqual([]);
        } else throw new Error(`unexpected source ${source.kind}`);
      }),
      { numRuns: 400 },
    );
    // The generated cases reach both kinds of source, not only the unbound ones.
    expect(seen.constant).toBeGreaterThan(0);
    expect(seen.derived).toBeGreaterThan(0);
  });

  it('never enters a value the new input does not give: a derived value comes from the new input or the replay stops', () => {
    fc.assert(
      fc.property(input, literal, input, (first, text, next) => {
        const ctx = ctxOf(first);
        const bound = bindAction({ action: 'type', input: { text } }, ctx, true);
        const derived = bound.sources.find((b) => b.source.kind === 'derived');
        if (!derived || derived.source.kind !== 'derived') return;
        const resolved = resolveSources(bound.input, bound.sources, next);
        if (!resolved.ok) return;
        const entered = String(resolved.input.text);
        const from = next[derived.source.path[0]!];
        expect(from).toBeDefined();
        expect(entered).toBe(deriveValue(from!, derived.source.derivation));
      }),
      { numRuns: 400 },
    );
  });

  const roles = fc.constantFrom('checkbox', 'radio', 'option', 'switch');
  const elementName = fc.oneof(value, word, value.map((v) => `Add ${v}`));

  it('ties a box ticked on the element the input names to that one value, and keeps the model\'s guard on anything else, unticking included', () => {
    const seen = { bound: 0, guarded: 0 };
    fc.assert(
      fc.property(input, roles, elementName, fc.boolean(), input, (first, role, name, tick, next) => {
        const ctx = ctxOf(first);
        const action = { action: 'form_input', input: { value: tick }, target: { role, name } };
        const bound = bindAction(action, ctx, true);
        const targets = bound.sources.filter((b) => b.at === 'target');
        // Never two sources for the element: one pattern or none.
        expect(targets.length).toBeLessThanOrEqual(1);
        const pattern = targets[0]?.source;
        const tied = tieAction(action, ctx.tie, { keys: new Set(), target: pattern !== undefined });
        if (!pattern || !tick) {
          // The model's own value: guarded on every input value it did not enter by name.
          expect(tied.guard?.paths.length).toBe(Object.keys(first).length);
          seen.guarded++;
          return;
        }
        seen.bound++;
        expect(tied.guard).toBeUndefined();
        expect(pattern.kind).toBe('pattern');
        if (pattern.kind !== 'pattern') return;
        const parts = pattern.parts;
        // Each value part is one input value, in the name once; the text around relates to no value.
        for (const part of parts) {
          if ('path' in part) expect(name.toLowerCase().split(first[part.path[0]!]!.trim().toLowerCase())).toHaveLength(2);
          else for (const v of Object.values(first)) if (v.trim().length >= 4) expect(part.text.toLowerCase()).not.toContain(v.trim().toLowerCase());
        }
        // The replay ticks the element the new input names, or stops: never one the new input does not name.
        const filled = fillPattern(parts, next);
        const paths = parts.flatMap((p) => ('path' in p ? [p.path[0]!] : []));
        if (paths.some((k) => next[k] === undefined)) expect(filled).toBeUndefined();
        else for (const k of paths) expect(filled).toContain(next[k]);
      }),
      { numRuns: 400 },
    );
    expect(seen.bound).toBeGreaterThan(0);
    expect(seen.guarded).toBeGreaterThan(0);
  });

  it('binds an upload to the input paths of its files only when each name is one input file\'s, and enters the new input\'s files there', () => {
    const fileName = fc.constantFrom('clerk', 'Kofi.pdf', 'invoice', 'Net 30', 'open.txt');
    const files = fc.dictionary(fc.constantFrom('invoice', 'receipt', 'scan'), fileName, { minKeys: 1 });
    fc.assert(
      fc.property(input, files, fc.array(fileName, { minLength: 1, maxLength: 2 }), files, (texts, first, uploaded, next) => {
        const payload = { ...texts, ...Object.fromEntries(Object.entries(first).map(([k, n]) => [`file_${k}`, { $file: n }])) };
        const bound = bindAction({ action: 'file_upload', input: { paths: uploaded } }, ctxOf(payload), true);
        const source = bound.sources.find((b) => b.at === 'paths')?.source;
        const owners = (n: string) => Object.entries(first).filter(([, f]) => f === n);
        if (!uploaded.every((n) => owners(n).length === 1)) {
          expect(source).toBeUndefined();
          expect(bound.input.paths).toEqual(uploaded);
          return;
        }
        expect(source?.kind).toBe('file');
        if (source?.kind !== 'file') return;
        expect(bound.input).toEqual({});
        // Entered: the input paths of the files (their `$file`), never the names of the earlier run.
        expect(sourcePaths(bound.sources)).toEqual(source.paths.map((p) => [...p, '$file']));
        const nextPayload = { ...texts, ...Object.fromEntries(Object.entries(next).map(([k, n]) => [`file_${k}`, { $file: n }])) };
        const resolved = resolveSources(bound.input, bound.sources, nextPayload);
        const want = source.paths.map((p) => next[p[0]!.slice('file_'.length)]);
        if (want.some((n) => n === undefined)) expect(resolved.ok).toBe(false);
        else expect(resolved).toEqual({ ok: true, input: { paths: want } });
      }),
      { numRuns: 400 },
    );
  });
});

describe('the final check\'s view of the record', () => {
  it('shows the main landmark first and summarises the navigation in a line', () => {
    const nav = ['navigation "Site administration"', ...Array.from({ length: 80 }, (_v, i) => `  link "Model ${i}" [ref_${i + 10}]`)];
    const main = ['main', '  heading "Change invoice"', '  textbox "Vendor" [ref_200] value="Nordwind GmbH"', '  textbox "Notes" [ref_201] value="Net 60"'];
    const view = recordView([...nav, ...main], 4_000);
    expect(view.main).toBe(true);
    expect(view.text.split('\n')[0]).toBe('main');
    expect(view.text).toContain('value="Net 60"');
    expect(view.text).toContain('navigation "Site administration" (summarised): 80 links and items: Model 0, Model 1');
    expect(view.text).not.toContain('Model 40');
  });
});

describe('forced tool choice', () => {
  it('is never sent to Sonnet 5.5 or with thinking on, and the scripted API refuses it there as the API does', () => {
    expect(mayForceToolChoice('claude-sonnet-5-5', false)).toBe(false);
    expect(mayForceToolChoice('claude-opus-5-5', true)).toBe(false);
    expect(mayForceToolChoice('claude-opus-5-5', false)).toBe(true);
    const body = { model: 'claude-sonnet-5-5', max_tokens: 10, messages: [], tool_choice: { type: 'tool', name: 'verify_replay' } };
    expect(checkRequestShape(body)).toMatchObject({ status: 400 });
    expect(checkRequestShape({ ...body, tool_choice: { type: 'auto' } })).toBeUndefined();
    expect(checkRequestShape({ ...body, model: 'claude-opus-5-5' })).toBeUndefined();
    expect(checkRequestShape({ ...body, model: 'claude-opus-5-5', thinking: { type: 'adaptive' } })).toMatchObject({ status: 400 });
  });
});
