/**
 * A replay never reports a wrong record as completed (docs/run-cache.md#values-from-the-input,
 * #the-final-check), on real parts: Redis, Chromium on an issue tracker's form (issues-app.ts),
 * the SDK against a scripted model that fills what it is shown from the input it is given — by
 * reference when the worker offers references, as a model does what its prompt says. Each
 * scenario runs a version once with the model, then again with a changed input: the repeat ends
 * with the new input's values in the record, the model having taken over where the cached run
 * cannot be trusted.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { lastObservation, refIn } from '../../demo/workflow.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import type { RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { hostRules } from '../support/env.js';
import { startIssuesApp, type IssueRecord, type IssuesApp } from '../support/issues-app.js';
import { startRunnerRig, type RunnerRig } from '../support/runner-rig.js';
import { isFinalCheck, isRepair, repairBrief, stepDone } from '../support/run-cache-requests.js';
import { finish, memberBlock, toolUse, turn, type RecordedRequest, type ScriptedContentBlock, type ScriptedTurn } from '../support/scripted-model-server.js';

let rig: RunnerRig<IssuesApp>;
let cache: RedisRunCache;
let app: IssuesApp;

beforeAll(async () => {
  rig = await startRunnerRig({ name: 'run-cache-replay', queue: 'cache-replay-test', app: startIssuesApp, hostRules: () => hostRules('issues.test') });
  ({ cache, app } = rig);
});

afterAll(async () => {
  await rig?.close();
});

beforeEach(() => {
  app.options.drafts = false;
});

interface Issue {
  subject: string;
  tracker: string;
  billable: boolean;
  watcher: string;
}

const WORKFLOW = (origin: string) => ({
  name: 'File an issue',
  prompt: 'Create an issue from the input: its subject, tracker and billable flag, with the watcher from the input added. Report the issue number.',
  allowedDomains: ['issues.test'],
  startUrl: `${origin}/issues/new`,
  outputSchema: { type: 'object', required: ['issue'], properties: { issue: { type: 'string' } } },
});

/** How the scripted model adds the watcher: ticks a project member's checkbox, or types the first name into the search and takes the first match. */
type WatcherBy = 'member' | 'search';

/** Whether the worker offers the input by reference (`{{path}}`) in its system prompt. */
function offersReferences(request: RecordedRequest): boolean {
  const system = (request.body as { system?: Array<{ text: string }> }).system ?? [];
  return system.some((block) => block.text.includes('{{subject}}'));
}

/** What a page line says of an element: its value, or its checked state. */
const lineOf = (seen: string, role: string, name: string) => seen.split('\n').find((l) => l.trim().startsWith(`${role} "${name}"`)) ?? '';
const valueOf = (seen: string, role: string, name: string) => /value="([^"]*)"/.exec(lineOf(seen, role, name))?.[1] ?? '';
const checked = (seen: string, name: string) => / checked\b/.test(lineOf(seen, 'checkbox', name));

/** The issue's page as the record shows it, from a read of the page (`term "Tracker"` then `definition "Bug"`) or its text. */
function issueShown(seen: string): { id: string; subject: string; tracker: string; billable: boolean; watchers: string } | undefined {
  const id = /Issue #(\d+) created/.exec(seen)?.[1];
  if (!id) return undefined;
  const lines = seen.split('\n').map((l) => l.trim());
  const after = (label: string) => {
    const at = lines.findIndex((l) => l === label || l.startsWith(`term "${label}"`));
    return at < 0 ? '' : (/^definition "([^"]*)"/.exec(lines[at + 1] ?? '')?.[1] ?? lines[at + 1] ?? '');
  };
  const subject = /heading "([^"]+)"/.exec(seen)?.[1] ?? lines[lines.findIndex((l) => l.startsWith(`Issue #${id}`)) - 1] ?? '';
  return { id, subject, tracker: after('Tracker'), billable: after('Billable') === 'yes', watchers: after('Watchers') };
}

/**
 * The final check as a model answers it: the page it is shown against the input it knows.
 * Drafts are never a filed issue.
 */
function finalCheck(request: RecordedRequest, input: Issue): ScriptedTurn {
  const seen = lastObservation(request.body);
  const shown = issueShown(seen);
  const matches = shown !== undefined && shown.subject === input.subject && shown.tracker === input.tracker && shown.billable === input.billable && shown.watchers.includes(input.watcher);
  const reason = matches ? 'The issue shows the input.' : shown ? `The issue shows ${JSON.stringify(shown)}, not the input.` : 'The page shows no filed issue.';
  return toolUse('verify_replay', { matches, reason, ...(shown ? { output: { issue: shown.id } } : {}) });
}

/**
 * A model that files the issue from what it is shown: fields that do not hold the input's value
 * yet are set, then Create. Asked to repair a step of a replay, it does the same on the page it
 * is shown, and says the step is done.
 */
function issueAgent(input: Issue, watcherBy: WatcherBy) {
  return (request: RecordedRequest): ScriptedTurn => {
    if (isFinalCheck(request)) return finalCheck(request, input);
    const acted = fileIssue(request, input, watcherBy);
    if (!isRepair(request)) return acted;
    // The same actions, then step_done; on the filed issue, nothing is left to do.
    return turn(...('content' in acted ? acted.content.filter((b) => b.name !== 'finish') : []), stepDone());
  };
}

/** The turn that files the issue from the page shown: fields that do not hold the input's value yet, then Create. */
function fileIssue(request: RecordedRequest, input: Issue, watcherBy: WatcherBy): ScriptedTurn {
  const byRef = offersReferences(request);
  const seen = lastObservation(request.body).split('This is the browser now.').at(-1)!;
  const ref = (role: string, name: string) => ({ type: 'ref', ref: refIn(seen, role, name) });
  const shown = issueShown(seen);
  if (shown) return finish('completed', { issue: shown.id });
  if (seen.includes('button "Publish"')) return turn(memberBlock('left_click', { target: ref('button', 'Publish') }), memberBlock('get_page_text'));
  if (!seen.includes('textbox "Subject"')) {
    // The page's text once, before giving up.
    const read = JSON.stringify(request.body).includes('"name":"get_page_text"');
    return read ? finish('failed', undefined, `lost on the page: ${seen.slice(0, 300)}`) : turn(memberBlock('get_page_text'));
  }
  const calls: ScriptedContentBlock[] = [];
  if (valueOf(seen, 'textbox', 'Subject') !== input.subject) calls.push(memberBlock('form_input', { target: ref('textbox', 'Subject'), value: byRef ? '{{subject}}' : input.subject }));
  if (valueOf(seen, 'combobox', 'Tracker') !== input.tracker) calls.push(memberBlock('form_input', { target: ref('combobox', 'Tracker'), value: byRef ? '{{tracker}}' : input.tracker }));
  if (checked(seen, 'Billable') !== input.billable) calls.push(memberBlock('form_input', { target: ref('checkbox', 'Billable'), value: byRef ? '{{billable}}' : input.billable }));
  const added = checked(seen, input.watcher) || seen.includes(`"Remove ${input.watcher}"`);
  if (!added && watcherBy === 'member') calls.push(memberBlock('form_input', { target: ref('checkbox', input.watcher), value: true }));
  if (!added && watcherBy === 'search') {
    // The first name finds the person: the text typed is a piece of the input's value, not the value.
    calls.push(memberBlock('left_click', { target: ref('combobox', 'Add watcher') }), memberBlock('type', { text: input.watcher.split(' ')[0]! }), memberBlock('key', { text: 'Return' }));
  }
  calls.push(memberBlock('left_click', { target: ref('button', 'Create') }), memberBlock('get_page_text'));
  return turn(...calls);
}

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  events: Array<Record<string, unknown>>;
  created: IssueRecord[];
}

async function run(versionId: string, input: Issue, watcherBy: WatcherBy): Promise<Run> {
  const before = app.issues.length;
  const { summary, requests, events } = await rig.run(issueAgent(input, watcherBy), { workflowId: 'wf-issue', workflowVersionId: versionId, inputPayload: input, specification: WORKFLOW(app.origin) });
  return { summary, requests, events, created: app.issues.slice(before) };
}

/** The record an input must leave: every value the input's, published. */
const recordOf = (input: Issue) => ({ subject: input.subject, tracker: input.tracker, billable: input.billable, watchers: [input.watcher], published: true });

/** The repeat left the new input's record, and said so: never a wrong record reported completed. */
function expectRecordOf(r: Run, input: Issue): void {
  expect(r.created, JSON.stringify(r.summary.document.cache)).toHaveLength(1);
  expect(r.created[0]).toMatchObject(recordOf(input));
  expect(r.summary.document).toMatchObject({ status: 'completed', output: { issue: r.created[0]!.id } });
}

describe('a cached repeat with a changed input', () => {
  it('does not untick a checkbox because an unrelated boolean input changed (a coincidence is not a binding)', async () => {
    const first: Issue = { subject: 'Printer on fire', tracker: 'Feature', billable: true, watcher: 'Kofi Mensah' };
    const recorded = await run('v-coincidence', first, 'member');
    expectRecordOf(recorded, first);
    const second: Issue = { ...first, subject: 'Printer still on fire', billable: false };
    const repeat = await run('v-coincidence', second, 'member');
    expectRecordOf(repeat, second);
    // The box is named after the input's {{watcher}}: its tick is that pattern's (docs/run-cache.md#sources), not
    // the input's {{billable}}, so the replay ticks the box this input names and never unticks it; no repair.
    expect(repeat.summary.document.cache).toMatchObject({ used: true, repairedSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
    expect(repeat.requests.map(isFinalCheck)).toEqual([true]);
    const ticks = repeat.events.filter((e) => e.type === 'action' && e.by === 'cache' && (e.input as { value?: unknown }).value !== undefined).map((e) => (e.input as { value?: unknown }).value);
    expect(ticks).toContain(true);
    expect(ticks).not.toContain(false);
  });

  it('does not type a piece of the previous input again: a first name typed from a full-name input is derived from the new one', async () => {
    const first: Issue = { subject: 'Invoice totals wrong', tracker: 'Bug', billable: false, watcher: 'Kofi Mensah' };
    const recorded = await run('v-piece', first, 'search');
    expectRecordOf(recorded, first);
    const second: Issue = { ...first, subject: 'Invoice totals still wrong', watcher: 'Yaw Boateng' };
    const repeat = await run('v-piece', second, 'search');
    expectRecordOf(repeat, second);
    // "Kofi" was the first word of {{watcher}} and of no other value (docs/run-cache.md#sources): the replay types this input's.
    expect(repeat.summary.document.cache).toMatchObject({ used: true, repairedSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
    expect(repeat.requests.map(isFinalCheck)).toEqual([true]);
    const typed = repeat.events.filter((e) => e.type === 'action' && e.action === 'type').map((e) => [e.by, e.input]);
    expect(typed).toEqual([['cache', { text: 'Yaw' }]]);
    expect(JSON.stringify(repeat.events)).not.toContain('"Kofi"');
  });

  it('enters a value the cached run never had to enter (a select left at its default) when the new input changes it', async () => {
    const first: Issue = { subject: 'Add dark mode', tracker: 'Bug', billable: false, watcher: 'Ama Owusu' };
    const recorded = await run('v-default', first, 'member');
    expectRecordOf(recorded, first);
    // The form's tracker was already the input's: the model left it as it was.
    const setTracker = recorded.events.some((e) => e.type === 'action' && String(e.label).includes('Tracker'));
    expect(setTracker).toBe(false);
    const second: Issue = { ...first, subject: 'Add a light mode', tracker: 'Feature' };
    const repeat = await run('v-default', second, 'member');
    expectRecordOf(repeat, second);
    // The watcher's tick (the model's literal `true`) is the last value before Create: the input changed, so it is
    // repaired, and the repair is told the tracker differs where the earlier run never entered it; it enters it by name.
    expect(repeat.summary.document.cache).toMatchObject({ used: true, repairedSteps: 1, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
    expect(repeat.summary.document.cache.reason).toContain('tracker');
    expect(repairBrief(repeat.requests[0]!)).toContain('{{tracker}}');
    expect(repeat.events.filter((e) => e.type === 'action' && e.by === 'repair').map((e) => e.input)).toContainEqual(expect.objectContaining({ value: '{{tracker}}' }));
    // The repaired run enters the tracker by name: the next run replays it with its own, and the tick on the box the
    // input names is that pattern's: the final check is the one request.
    const third: Issue = { ...second, subject: 'Add a sepia mode', tracker: 'Support' };
    const after = await run('v-default', third, 'member');
    expectRecordOf(after, third);
    expect(after.requests.map(isFinalCheck)).toEqual([true]);
    expect(after.summary.document.cache).toMatchObject({ used: true, repairedSteps: 0 });
    expect(after.events.filter((e) => e.type === 'action' && e.by === 'cache').map((e) => e.input)).toContainEqual(expect.objectContaining({ value: '{{tracker}}' }));
  });
});

describe('the final check of a replay', () => {
  it('is the one model request of a repeat on unchanged pages, and reads its output', async () => {
    const first: Issue = { subject: 'Slow search', tracker: 'Support', billable: true, watcher: 'Ama Owusu' };
    await run('v-check', first, 'member');
    const repeat = await run('v-check', first, 'member');
    expectRecordOf(repeat, first);
    expect(repeat.requests).toHaveLength(1);
    expect(isFinalCheck(repeat.requests[0]!)).toBe(true);
    expect(repeat.summary.document.cache).toMatchObject({ used: true, modelSteps: 0, repairedSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
    // With a changed input, the watcher's tick is still the pattern's (the box the input names): the final check alone.
    const second: Issue = { ...first, subject: 'Slow search again' };
    const changed = await run('v-check', second, 'member');
    expectRecordOf(changed, second);
    expect(changed.requests.map(isFinalCheck)).toEqual([true]);
    expect(changed.summary.document.cache).toMatchObject({ used: true, repairedSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
  });

  it('hands the run to the model when it says the page does not show the input, and the run still completes right', async () => {
    const first: Issue = { subject: 'Broken link', tracker: 'Bug', billable: true, watcher: 'Kofi Mensah' };
    await run('v-check-no', first, 'member');
    // The tracker now saves a draft first: every cached step still matches, the issue is not filed.
    app.options.drafts = true;
    // The same input: every cached step replays (a changed one would have the tick, the model's literal, repaired first).
    const second: Issue = { ...first };
    const repeat = await run('v-check-no', second, 'member');
    expectRecordOf(repeat, second);
    expect(isFinalCheck(repeat.requests[0]!)).toBe(true);
    expect(repeat.summary.document.cache).toMatchObject({ used: true, fallbackAtStep: null, finalCheck: { ran: true, matches: false, reason: 'The page shows no filed issue.' } });
    // The model was told why it takes over.
    expect(JSON.stringify(repeat.requests[1]!.body)).toContain('The page shows no filed issue.');
    expect(repeat.summary.document.cache.modelSteps).toBeGreaterThan(0);
    // The check is no step: its picture is no step's, and the take-over's opening picture is its first step's (2, after the replayed one).
    const stepsOf = (type: string) => repeat.events.filter((e) => e.type === type).map((e) => e.step);
    expect(stepsOf('model_turn')).toEqual([2, 3]);
    expect(stepsOf('step_screenshot')).toEqual([2]);
  });
});

describe('keys from outside', () => {
  /** Keys a caller, a page and a model choose: a dotted key, `__proto__`, an output key shaped like a path to a prototype. */
  const input = (subject: string) => JSON.parse(`{"issue": {"U.S. subject": ${JSON.stringify(subject)}}, "__proto__": {"tracker": "Feature"}, "watcher": "Ama Owusu"}`) as Record<string, unknown>;
  const hostileOutput = (issue: string) => JSON.parse(`{"issue": ${JSON.stringify(issue)}, "constructor.prototype.profile": "polluted", "__proto__": {"profile": "polluted"}, "constructor": {"prototype": {"profile": "polluted"}}}`) as Record<string, unknown>;

  /** Enters the subject and the tracker by their names (`{{issue["U.S. subject"]}}`, `{{__proto__.tracker}}`) and reports an output with hostile keys. */
  function keysAgent() {
    return (request: RecordedRequest): ScriptedTurn => {
      const seen = lastObservation(request.body).split('This is the browser now.').at(-1)!;
      const shown = issueShown(seen);
      if (isFinalCheck(request)) return toolUse('verify_replay', shown ? { matches: true, reason: 'Filed.', output: hostileOutput(shown.id) } : { matches: false, reason: 'Nothing filed.' });
      if (shown) return toolUse('finish', { status: 'completed', output: hostileOutput(shown.id) });
      const ref = (role: string, name: string) => ({ type: 'ref', ref: refIn(seen, role, name) });
      return turn(
        memberBlock('form_input', { target: ref('textbox', 'Subject'), value: '{{issue["U.S. subject"]}}' }),
        memberBlock('form_input', { target: ref('combobox', 'Tracker'), value: '{{__proto__.tracker}}' }),
        // No watcher: a tick is the model's own literal, which a changed input sends to a repair; this test is about keys.
        memberBlock('left_click', { target: ref('button', 'Create') }),
        memberBlock('get_page_text'),
      );
    };
  }

  it('a dotted key and a __proto__ key are entered and replayed by name, and an output key reaches no prototype', async () => {
    const runKeys = (subject: string) => rig.run(keysAgent(), { workflowId: 'wf-keys', workflowVersionId: 'v-keys', inputPayload: input(subject), specification: WORKFLOW(app.origin) });
    const first = await runKeys('Dotted keys first');
    expect(first.summary.document.status).toBe('completed');
    expect((first.requests[0]!.body as { system: Array<{ text: string }> }).system[0]!.text).toContain('{{issue["U.S. subject"]}} = "Dotted keys first"\n{{__proto__.tracker}} = "Feature"');
    expect(app.issues.at(-1)).toMatchObject({ subject: 'Dotted keys first', tracker: 'Feature' });
    const stored = (await cache.get('v-keys', new AbortController().signal)) as { steps: Array<Array<{ refs?: unknown }>> };
    expect(stored.steps.flat().map((a) => a.refs).filter(Boolean)).toEqual([[['issue', 'U.S. subject']], [['__proto__', 'tracker']]]);

    const repeat = await runKeys('Dotted keys again');
    expect(repeat.requests).toHaveLength(1);
    expect(repeat.summary.document).toMatchObject({ status: 'completed', cache: { used: true, modelSteps: 0, finalCheck: { ran: true, matches: true } } });
    expect(app.issues.at(-1)).toMatchObject({ subject: 'Dotted keys again', tracker: 'Feature' });
    const output = repeat.summary.document.output as Record<string, unknown>;
    expect(Object.keys(output)).toEqual(['issue', 'constructor.prototype.profile', '__proto__', 'constructor']);
    // Neither run's output reached a prototype of this process (the worker's).
    expect(({} as Record<string, unknown>).profile).toBeUndefined();
    expect(Object.getPrototypeOf(output)).toBe(Object.prototype);
  });
});
