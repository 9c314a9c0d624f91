/**
 * The rules of a repair (docs/run-cache.md#repair-not-restart) as properties over generated
 * cached runs, pages and repairs: where the replay goes on (resume.ts) — never at an action the
 * repair already did, never past a later step that fits the page, and to the final check only
 * when nothing of the earlier run is left — and what a repair must have entered (repair.ts):
 * each of the step's values by its name, never written out as text, or, only when the model says
 * the step is done, not at all. And what a repaired entry keeps of the values the pages no
 * longer ask for.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathId, type KeyPath } from '../../src/contract/key-path.js';
import { PICKED, SKIPPED, actionOf, entersValue } from '../../src/run-cache/actions.js';
import { buildEntry } from '../../src/run-cache/entry.js';
import { parseCacheEntry } from '../../src/run-cache/format.js';
import type { Probe } from '../../src/run-cache/precondition.js';
import { valuesNotEntered } from '../../src/run-cache/repair.js';
import { findResume, sameAction } from '../../src/run-cache/resume.js';
import { inputLeaves } from '../../src/run-cache/values.js';
import type { ActionTrace } from '../../src/toolset/types.js';
import type { CachedAction } from '../../src/contract/run-cache.js';

const ORIGIN = 'https://app.example';
/** Few pages and names, so that generated runs share them: generic buttons, pages visited twice. */
const page = fc.constantFrom('/a', '/b', '/c', '/d').map((p) => `${ORIGIN}${p}`);
const element = fc.record({ role: fc.constantFrom('button', 'textbox', 'link'), name: fc.constantFrom('Next', 'Save', 'Name', 'City', 'Help'), tag: fc.constant('x') });
const action: fc.Arbitrary<CachedAction> = fc.oneof(
  fc.record({ tool: fc.constant('left_click'), toolsetName: fc.constant('browser'), input: fc.constant({ target: { type: 'ref' } }), page, target: element }),
  fc
    .record({ tool: fc.constant('form_input'), toolsetName: fc.constant('browser'), value: fc.constantFrom('{{name}}', '{{city}}', 'x'), page, target: element })
    .map(({ value, ...rest }) => ({ ...rest, input: { target: { type: 'ref' }, value }, ...(value.startsWith('{{') ? { refs: [[value.slice(2, -2)]] } : {}) })),
  fc.record({ tool: fc.constant('wait'), toolsetName: fc.constant('browser'), input: fc.constant({ duration: 1 }), page }),
);
const steps = fc.array(fc.array(action, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 });

/** A repair's trace of a cached action: the same action on the same element with the same input. */
const traceOf = (cached: CachedAction): ActionTrace => ({ tool: cached.tool, ...(cached.toolsetName ? { toolsetName: cached.toolsetName } : {}), input: { ...cached.input, target: { type: 'ref', ref: 'ref_9' } }, url: cached.page, ...(cached.target ? { target: { ...cached.target } } : {}) });

interface Scenario {
  steps: CachedAction[][];
  stop: { step: number; action: number };
  mode: 'replace' | 'insert';
  done: ActionTrace[];
  stepDone: boolean;
  /** Whether each cached action's precondition holds now, by its place; or a kind of block. */
  probes: Map<CachedAction, Probe>;
}

const scenario: fc.Arbitrary<Scenario> = steps.chain((cached) =>
  fc
    .record({
      stopStep: fc.nat({ max: cached.length - 1 }),
      stopAction: fc.nat({ max: 2 }),
      mode: fc.constantFrom('replace' as const, 'insert' as const),
      did: fc.array(fc.tuple(fc.nat({ max: cached.length - 1 }), fc.nat({ max: 2 })), { maxLength: 4 }),
      stepDone: fc.boolean(),
      probes: fc.array(fc.constantFrom<Probe>({ holds: true }, { holds: false, kind: 'absent', reason: 'gone' }, { holds: false, kind: 'absent', reason: 'not found', onPage: true }, { holds: false, kind: 'guard', reason: 'changed' }), { minLength: 18, maxLength: 18 }),
    })
    .map(({ stopStep, stopAction, mode, did, stepDone, probes }) => {
      const flat = cached.flat();
      const done = did.map(([s, a]) => cached[s]![Math.min(a, cached[s]!.length - 1)]!).filter((c) => !SKIPPED.has(actionOf(c))).map(traceOf);
      return { steps: cached, stop: { step: stopStep, action: Math.min(stopAction, cached[stopStep]!.length - 1) }, mode, done, stepDone, probes: new Map(flat.map((c, i) => [c, probes[i % probes.length]!])) };
    }),
);

const run = (s: Scenario) => findResume(async (cached) => s.probes.get(cached)!, { steps: s.steps, stop: s.stop, mode: s.mode, done: s.done, stepDone: s.stepDone });

describe('where a replay goes on after a repair', () => {
  it('never at an action the repair already did or a wait, always at one that fits the page or is blocked there for its own reason, never past a later step that fits nor past values still to enter on this page', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const found = await run(s);
        // What counts as acting: an action of the stopped one's kind (a value entered, for one that enters a value).
        const stopped = s.steps[s.stop.step]![s.stop.action]!;
        const entered = (t: (typeof s.done)[number]) => ['form_input', 'type', 'file_upload', 'upload_file'].includes(t.tool) || (t.target !== undefined && PICKED.has(t.target.role) && !('value' in t.input));
        const acted = s.stepDone || s.done.some((t) => (entersValue(stopped) ? entered(t) : !SKIPPED.has(t.tool) && !['scroll', 'scroll_to', 'mouse_move', 'read_page', 'find', 'get_page_text'].includes(t.tool)));
        // Before the model acted or said the step is done, the replay never passes the stopped action.
        if (!acted) {
          if (found.kind === 'at') expect(found.at.step === s.stop.step && found.at.action >= s.stop.action && (s.mode === 'insert' || found.at.action === s.stop.action)).toBe(true);
          else expect(found.kind).toBe('none');
          return;
        }
        const undone = (c: CachedAction) => !SKIPPED.has(actionOf(c)) && !s.done.some((t) => sameAction(c, t));
        const goesOn = (c: CachedAction) => s.probes.get(c)!.holds || (s.probes.get(c) as { kind: string }).kind !== 'absent';
        /** Undone actions that enter input values by name: never passed over on their own page. */
        const enteredByRepair = new Set(s.done.map((t) => String(t.input.value ?? '')));
        const entersInput = (actions: CachedAction[]) => actions.some((c) => undone(c) && (c.refs ?? []).some((p) => !enteredByRepair.has(`{{${p.join('.')}}}`)));
        const onPage = (c: CachedAction) => (s.probes.get(c) as { onPage?: boolean }).onPage === true;
        /** Where a later step stops being passed over: its first undone action fits, or it is on this page and enters input values. */
        const fits = (step: CachedAction[]) => {
          const i = step.findIndex(undone);
          return i >= 0 && (goesOn(step[i]!) || (onPage(step[i]!) && entersInput(step.slice(i))));
        };
        /** The earliest later step that fits is where the replay must go on, if any. */
        const firstFit = s.steps.slice(s.stop.step + 1).findIndex(fits);
        // The rest of the stopped step enters input values the repair did not: it comes before any later step.
        const restFirst = s.mode === 'replace' && entersInput(s.steps[s.stop.step]!.slice(s.stop.action + 1));
        const restFits = restFirst && ((undone(stopped) && s.probes.get(stopped)!.holds) || s.steps[s.stop.step]!.slice(s.stop.action + 1).find(undone) !== undefined && goesOn(s.steps[s.stop.step]!.slice(s.stop.action + 1).find(undone)!));
        if (found.kind === 'at') {
          const at = s.steps[found.at.step]![found.at.action]!;
          expect(undone(at)).toBe(true);
          expect(found.at.step).toBeGreaterThanOrEqual(s.stop.step);
          if (found.at.step > s.stop.step) {
            expect(found.at.step).toBe(s.stop.step + 1 + firstFit);
            expect(fits(s.steps[found.at.step]!)).toBe(true);
            expect(restFits).toBe(false);
          } else expect(goesOn(at)).toBe(true);
          // Back in the stopped step only when no later step fits, or its rest enters input values (inserting: its own actions come first).
          if (found.at.step === s.stop.step && s.mode === 'replace') expect(firstFit === -1 || restFirst).toBe(true);
          if (found.at.step === s.stop.step) expect(found.at.action).toBeGreaterThanOrEqual(s.stop.action);
          // The stopped action itself again only when it holds now.
          if (s.mode === 'replace' && found.at.step === s.stop.step && found.at.action === s.stop.action) expect(s.probes.get(at)!.holds).toBe(true);
        } else {
          expect(firstFit).toBe(-1);
          expect(restFits).toBe(false);
        }
        // The final check comes only when nothing of the earlier run is left after the stop.
        const left = s.steps.flatMap((step, i) => step.filter((c, a) => (i > s.stop.step || (i === s.stop.step && (a > s.stop.action || (s.mode === 'insert' && a === s.stop.action)))) && undone(c)));
        if (found.kind === 'end') expect(left).toEqual([]);
        if (found.kind === 'none' && left.length === 0) expect(s.stepDone || s.done.length > 0).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('passes over a removed page to the step of the page it is on, and retries the stopped action when only what was in the way was closed', async () => {
    const at = (p: string, name: string, value?: string): CachedAction => ({ tool: value ? 'form_input' : 'left_click', toolsetName: 'browser', input: value ? { target: { type: 'ref' }, value } : { target: { type: 'ref' } }, page: `${ORIGIN}${p}`, target: { role: value ? 'textbox' : 'button', name, tag: 'x' } });
    const flow = [[at('/a', 'Name', '{{name}}'), at('/a', 'Next')], [at('/b', 'City', '{{city}}'), at('/b', 'Next')], [at('/c', 'Permit', '{{permit}}'), at('/c', 'Next')]];
    const on = (p: string, missing: string[] = []) => async (c: CachedAction): Promise<Probe> => (c.page === `${ORIGIN}${p}` && !missing.includes(c.target!.name) ? { holds: true } : { holds: false, kind: 'absent', reason: 'not here' });
    // Page /b is gone: the browser is on /c; the model said step_done and did nothing.
    expect(await findResume(on('/c'), { steps: flow, stop: { step: 1, action: 0 }, mode: 'replace', done: [], stepDone: true })).toEqual({ kind: 'at', at: { step: 2, action: 0 } });
    // A dialog over /b was closed: nothing later fits, the stopped click does now.
    expect(await findResume(on('/b'), { steps: flow, stop: { step: 1, action: 1 }, mode: 'replace', done: [], stepDone: false })).toEqual({ kind: 'at', at: { step: 1, action: 1 } });
    // The model filled the relabelled field and pressed Next itself: the Next of its step is done, the next page's step goes on.
    expect(await findResume(on('/c'), { steps: flow, stop: { step: 1, action: 0 }, mode: 'replace', done: [traceOf(flow[1]![1]!)], stepDone: true })).toEqual({ kind: 'at', at: { step: 2, action: 0 } });
    // The model filled the relabelled field only: the replay presses its Next.
    expect(await findResume(on('/b', ['City']), { steps: flow, stop: { step: 1, action: 0 }, mode: 'replace', done: [], stepDone: true })).toEqual({ kind: 'at', at: { step: 1, action: 1 } });
    // A field to fill, and the model only scrolled while the next page's step already fits: the field is not passed over.
    const scrolled = traceOf({ tool: 'scroll', toolsetName: 'browser', input: { direction: 'down' }, page: `${ORIGIN}/b` });
    expect((await findResume(on('/c'), { steps: flow, stop: { step: 1, action: 0 }, mode: 'replace', done: [scrolled], stepDone: false })).kind).toBe('none');
    // The last step redone whole: the final check follows.
    expect(await findResume(on('/done'), { steps: flow, stop: { step: 2, action: 1 }, mode: 'replace', done: [], stepDone: true })).toEqual({ kind: 'end' });
    // Nowhere the earlier run went: the model is told what it did next.
    expect(await findResume(on('/elsewhere'), { steps: flow, stop: { step: 0, action: 1 }, mode: 'replace', done: [], stepDone: true })).toEqual({ kind: 'none', reason: `the page does not match what the earlier run did next: form_input on textbox "City" on ${ORIGIN}/b` });
  });
});

describe('what a repair must have entered', () => {
  const leaves = inputLeaves({ maskedPayload: { city: 'Accra', name: 'Kofi Mensah', code: 'A7', password: '{{password}}' }, paths: ['password'] });
  const name = fc.constantFrom<KeyPath>(['city'], ['name'], ['code'], ['password']);
  const valueOf: Record<string, string> = { city: 'Accra', name: 'Kofi Mensah', code: 'A7' };
  /** How a repair action entered a path: by its name, written out as text, a piece of it, or something else. */
  const entry = fc.record({ path: name, how: fc.constantFrom('name', 'text', 'piece', 'other'), key: fc.constantFrom('value', 'text') });
  const textOf = ({ path, how }: { path: KeyPath; how: string }) =>
    how === 'name' ? `Dear {{${path[0]}}},` : how === 'text' ? (valueOf[path[0]!] ?? 'hunter2') : how === 'piece' ? (valueOf[path[0]!] ?? 'hunter2').split(' ')[0]! : 'unrelated words';

  it('is each required value by its name; a value written out as text never counts, and none entered only when the model says the step is done', () => {
    fc.assert(
      fc.property(fc.uniqueArray(name, { selector: pathId, maxLength: 3 }), fc.array(entry, { maxLength: 4 }), fc.boolean(), (required, entries, stepDone) => {
        const done: ActionTrace[] = entries.map((e) => ({ tool: 'form_input', toolsetName: 'browser', input: { [e.key]: textOf(e) }, url: ORIGIN }));
        const outcome = { notEntered: [] as KeyPath[] };
        const why = valuesNotEntered({ required, leaves }, done, stepDone, outcome);
        const byName = (p: KeyPath) => entries.some((e) => e.how === 'name' && pathId(e.path) === pathId(p));
        // Written out: the value whole, or a piece of it long enough to come from it (secrets are never compared).
        const written = (p: KeyPath) => p[0] !== 'password' && entries.some((e) => pathId(e.path) === pathId(p) && (e.how === 'text' || (e.how === 'piece' && (valueOf[p[0]!] ?? '').includes(' '))));
        const missing = required.filter((p) => !byName(p));
        if (missing.length === 0) expect(why).toBeUndefined();
        if (missing.some(written)) expect(why).toMatch(/was written out as text: enter it by its name/);
        if (missing.length > 0 && !stepDone) expect(why).toBeDefined();
        if (why === undefined) expect(outcome.notEntered.map(pathId).sort()).toEqual(missing.map(pathId).sort());
        else expect(missing.length).toBeGreaterThan(0);
      }),
      { numRuns: 400 },
    );
  });
});

describe('a repaired entry', () => {
  const key = { versionId: 'v1', fingerprint: 'f'.repeat(32), toolType: 'browser_toolset_20260801' };
  const input = { maskedPayload: { name: 'Kofi', city: 'Accra', permit: 'Event' }, paths: [] };
  const trace = (value: string): ActionTrace => ({ tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref', ref: 'ref_1' }, value }, url: `${ORIGIN}/a`, target: { role: 'textbox', name: 'Field', tag: 'input' } });

  it('keeps the values the pages no longer ask for, but those a step enters by name, and reads as it was written', () => {
    const entry = buildEntry({ ...key, executionId: 'e1', steps: [[trace('{{name}}')], [trace('{{permit}}')]], input, notAsked: [['city'], ['permit'], ['city']], now: () => 0 });
    expect(entry.notAsked).toEqual([['city']]);
    expect(parseCacheEntry(JSON.parse(JSON.stringify(entry)))).toEqual(entry);
    expect(buildEntry({ ...key, executionId: 'e2', steps: [[trace('{{name}}')]], input, now: () => 0 }).notAsked).toBeUndefined();
  });

  it('is not read when its paths of values no longer asked for are not arrays of keys', () => {
    const entry = buildEntry({ ...key, executionId: 'e1', steps: [[trace('{{name}}')]], input, notAsked: [['city']], now: () => 0 });
    for (const bad of ['city', [['city', 1]], [{ 0: 'city' }], null]) expect(parseCacheEntry({ ...entry, notAsked: bad })).toBeUndefined();
  });
});
