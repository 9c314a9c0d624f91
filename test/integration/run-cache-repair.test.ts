/**
 * Repair, not restart (docs/run-cache.md#repair-not-restart), on real parts: Redis, Chromium on a
 * ten-page application form whose pages change between runs (flow-app.ts), the SDK against a
 * scripted model that acts on what it is shown (flow-agent.ts). A version's first run is made
 * once with the model; each scenario starts from that cache with the site changed under it — a
 * renamed button, a relabelled and moved field, a dialog in the way, a removed page, two
 * changed pages — and a new input: the repeat repairs the changed step with one model request,
 * resumes the replay, files the new input's application and costs a fraction of the first run;
 * the run after it replays fully, the final check its only request. A flow that really changed
 * falls back to the model and still completes.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { type RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { hostRules } from '../support/env.js';
import { flowAgent, type FlowInput } from '../support/flow-agent.js';
import { startFlowApp, type FlowApp, type FlowApplication } from '../support/flow-app.js';
import { flowChanged, isFinalCheck, isRepair } from '../support/run-cache-requests.js';
import { startRunnerRig, type RunnerRig } from '../support/runner-rig.js';
import { finish, toolUse, turn, type RecordedRequest, type Script } from '../support/scripted-model-server.js';

let rig: RunnerRig<FlowApp>;
let cache: RedisRunCache;
let app: FlowApp;
/** The version's first run, made with the model on the site as it was: every scenario starts from its cache. */
let first: Run;

const WORKFLOW = (origin: string) => ({
  name: 'Apply for a permit',
  prompt: 'Fill in the permit application from the input, one page after the other, and submit it. Report the application number.',
  allowedDomains: ['flow.test'],
  startUrl: `${origin}/apply/applicant`,
  outputSchema: { type: 'object', required: ['application'], properties: { application: { type: 'string', pattern: '^APP-\\d+$' } } },
});

const input = (n: number): FlowInput => ({
  name: ['Ada Lovelace', 'Kofi Mensah', 'Efua Sutherland', 'Yaw Boateng', 'Ama Owusu'][n % 5]!,
  born: `19${80 + n}-0${(n % 9) + 1}-1${n % 10}`,
  email: `applicant${n}@example.org`,
  phone: `+44 20 7946 00${10 + n}`,
  street: `${12 + n} Crane Street`,
  city: ['London', 'Accra', 'Kumasi', 'Leeds', 'Tamale'][n % 5]!,
  permit: ['Residential', 'Commercial', 'Event'][n % 3]!,
  starts: `2026-0${(n % 9) + 1}-2${n % 10}`,
  reason: `Works on the house, phase ${n}`,
  reference: `REF-${1000 + n}`,
});

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  /** Input tokens of each request, by the scripted API's accounting (uncached, cache reads and writes). */
  tokens: number;
  events: Array<Record<string, unknown>>;
  filed: FlowApplication[];
}

async function run(versionId: string, payload: FlowInput, options: { spec?: Record<string, unknown>; script?: Script } = {}): Promise<Run> {
  const before = app.filed.length;
  const ran = await rig.run(options.script ?? flowAgent(payload), { workflowId: 'wf-permit', workflowVersionId: versionId, inputPayload: payload, specification: { ...WORKFLOW(app.origin), ...options.spec } });
  return { ...ran, filed: app.filed.slice(before) };
}

/** A version whose cache is the first run's. */
async function seeded(versionId: string): Promise<string> {
  const entry = (await cache.get('v-base', new AbortController().signal)) as Record<string, unknown>;
  await cache.put(versionId, { ...entry, versionId });
  return versionId;
}

/** The application an input must leave: each of its values, but for those of pages the site no longer has. */
const applicationOf = (values: FlowInput, gone: string[] = []) => Object.fromEntries(Object.entries(values).filter(([k]) => !gone.includes(k)));

function expectFiled(r: Run, values: FlowInput, gone: string[] = []): void {
  expect(r.summary.document.status, JSON.stringify({ error: r.summary.document.error, cache: r.summary.document.cache })).toBe('completed');
  expect(r.filed).toHaveLength(1);
  expect(r.filed[0]).toEqual({ id: r.filed[0]!.id, ...applicationOf(values, gone) });
  expect(r.summary.document.output).toEqual({ application: `APP-${r.filed[0]!.id}` });
}

/** A repeat on the changed site costs one request per changed step and the final check, and a fraction of the first run's tokens; the run after it replays fully. */
async function expectRepaired(versionId: string, changed: number, gone: string[] = []): Promise<Run> {
  const repeat = await run(versionId, input(2));
  expectFiled(repeat, input(2), gone);
  expect(repeat.requests.filter(isRepair)).toHaveLength(changed);
  expect(repeat.requests).toHaveLength(changed + 1);
  expect(isFinalCheck(repeat.requests.at(-1)!)).toBe(true);
  expect(repeat.tokens).toBeLessThanOrEqual(0.15 * changed * first.tokens);
  // Every request's tokens are the run's: the repairs' and the final check's.
  const { usage } = repeat.summary.document;
  expect(usage.inputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens).toBe(repeat.tokens);
  expect(repeat.summary.document.cache).toMatchObject({ used: true, repairedSteps: changed, fallbackAtStep: null, modelSteps: changed, finalCheck: { ran: true, matches: true } });
  // Repaired actions say so in logs.jsonl; replayed ones are the cache's.
  const by = new Set(repeat.events.filter((e) => e.type === 'action').map((e) => e.by));
  expect([...by].sort()).toEqual(gone.length > 0 ? ['cache'] : ['cache', 'repair']);
  expect(repeat.events.filter((e) => e.type === 'model_turn').map((e) => e.by)).toEqual(Array(changed).fill('repair'));
  expect(repeat.events.filter((e) => e.type === 'step_repair')).toHaveLength(changed);

  const after = await run(versionId, input(3));
  expectFiled(after, input(3), gone);
  expect(after.requests).toHaveLength(1);
  expect(isFinalCheck(after.requests[0]!)).toBe(true);
  expect(after.summary.document.cache).toMatchObject({ used: true, modelSteps: 0, repairedSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
  return repeat;
}

beforeAll(async () => {
  rig = await startRunnerRig({ name: 'run-cache-repair', queue: 'cache-repair-test', app: startFlowApp, hostRules: () => hostRules('flow.test') });
  ({ cache, app } = rig);
  first = await run('v-base', input(1));
  expectFiled(first, input(1));
  expect(first.requests.length).toBeGreaterThanOrEqual(11);
});

afterAll(async () => {
  await rig?.close();
});

beforeEach(() => {
  for (const key of Object.keys(app.options)) delete app.options[key as keyof typeof app.options];
});

describe('a replay whose page changed repairs that step and goes on', () => {
  it('a renamed button: the model clicks the new one, and the replay resumes at the next page', async () => {
    const version = await seeded('v-renamed');
    app.options.renamed = ['permit'];
    const repeat = await expectRepaired(version, 1);
    expect(repeat.events.find((e) => e.type === 'step_repair')).toMatchObject({ cachedStep: 7, outcome: 'resumed', before: ['left_click on button "Next"'], after: [expect.stringContaining('Continue')], resumedAtStep: 8, modelSteps: 1 });
  });

  it('a relabelled and moved field: the model enters the value by its name there, read back, and the replay resumes', async () => {
    const version = await seeded('v-relabelled');
    app.options.relabelled = ['phone'];
    const repeat = await expectRepaired(version, 1);
    const repair = repeat.events.find((e) => e.type === 'step_repair')!;
    expect(repair).toMatchObject({ cachedStep: 4, outcome: 'resumed', before: ['form_input on textbox "Phone number"', 'left_click on button "Next"'], resumedAtStep: 5 });
    // Entered by name: the repair's own action, and the next cache's.
    const entered = repeat.events.find((e) => e.type === 'action' && e.by === 'repair' && e.action === 'form_input');
    expect(entered).toMatchObject({ ok: true, input: { value: '{{phone}}' } });
    const stored = JSON.stringify(await cache.get(version, new AbortController().signal));
    expect(stored).toContain('Mobile or landline');
    expect(stored).not.toContain(input(2).phone);
  });

  it('a dialog in the way: the model closes it, and the replay takes the step it stopped at', async () => {
    const version = await seeded('v-dialog');
    app.options.dialog = ['email'];
    const repeat = await expectRepaired(version, 1);
    expect(repeat.events.find((e) => e.type === 'step_repair')).toMatchObject({ cachedStep: 3, outcome: 'resumed', before: [], after: [expect.stringContaining('Accept and continue')], resumedAtStep: 3 });
    // The repair was shown the dialog first, said to be open, before the page behind it.
    const shown = JSON.stringify(repeat.requests.find(isRepair)!.body);
    const dialogAt = shown.search(/dialog \\"We updated our terms\\" \[ref_\d+\] \(open, modal\)/);
    expect(dialogAt).toBeGreaterThan(shown.indexOf("The page's interactive elements in view"));
    expect(dialogAt).toBeLessThan(shown.indexOf('the page behind the modal dialog'));
  });

  it("a removed page: the model says the page no longer asks for its value, and the replay goes on at the next page's step", async () => {
    const version = await seeded('v-removed');
    app.options.removed = ['city'];
    const repeat = await expectRepaired(version, 1, ['city']);
    expect(repeat.events.find((e) => e.type === 'step_repair')).toMatchObject({ cachedStep: 6, outcome: 'resumed', after: [], resumedAtStep: 7, notEntered: ['{{city}}'] });
    // The final check was told which value the run did not enter, and why.
    expect(JSON.stringify(repeat.requests.at(-1)!.body)).toContain('The replay did not enter {{city}}');
  });

  it('two changed pages are repaired one by one', async () => {
    const version = await seeded('v-two');
    app.options.renamed = ['birth'];
    app.options.relabelled = ['start'];
    const repeat = await expectRepaired(version, 2);
    expect(repeat.events.filter((e) => e.type === 'step_repair').map((e) => e.cachedStep)).toEqual([2, 8]);
  });
});

describe('a repaired run that fails', () => {
  it('leaves the entry as it was', async () => {
    const version = await seeded('v-failed');
    const before = await cache.get(version, new AbortController().signal);
    app.options.renamed = ['permit'];
    // The repair goes through; the final check then finds the application wrong, and the model gives up.
    const agent = flowAgent(input(5));
    const { summary } = await rig.run(
      (request) => (isFinalCheck(request) ? toolUse('verify_replay', { matches: false, reason: 'The application shows another permit.' }) : isRepair(request) ? agent(request) : finish('failed', undefined, 'The application cannot be corrected.')),
      { workflowId: 'wf-permit', workflowVersionId: version, inputPayload: input(5), specification: WORKFLOW(app.origin) },
    );
    expect(summary.document).toMatchObject({ status: 'failed', cache: { used: true, repairedSteps: 1, finalCheck: { ran: true, matches: false } } });
    expect(await cache.get(version, new AbortController().signal)).toEqual(before);
  });
});

describe('a flow that really changed', () => {
  it('falls back to the model after the repair finds no way back to the earlier run, and still completes with the new input', async () => {
    const version = await seeded('v-changed');
    app.options.changedFlow = true;
    const repeat = await run(version, input(4));
    expectFiled(repeat, input(4));
    const { cache: report } = repeat.summary.document;
    expect(report).toMatchObject({ used: true, repairedSteps: 0, fallbackAtStep: 5 });
    expect(report.reason).toContain('the flow has changed');
    expect(repeat.events.find((e) => e.type === 'step_repair')).toMatchObject({ cachedStep: 5, outcome: 'flow_changed' });
    // The model that took over was told why, and carried the run to its end.
    const takeOver = repeat.requests.find((r) => !isRepair(r) && !isFinalCheck(r))!;
    expect(JSON.stringify(takeOver.body)).toContain('found that the flow has changed');
    expect(repeat.events.filter((e) => e.type === 'model_turn' && e.by === 'model').length).toBeGreaterThan(0);
  });
});

describe('the run cache draws on the run\'s budget (docs/specification.md#budget)', () => {
  it('a repair counts: with the budget spent by it, the final check is never sent', async () => {
    const version = await seeded('v-budget-check');
    const before = await cache.get(version, new AbortController().signal);
    app.options.renamed = ['permit'];
    const repeat = await run(version, input(6), { spec: { budget: { tokens: 1 } } });
    expect(repeat.summary.document).toMatchObject({ status: 'failed', error: { code: 'budget_exceeded' }, budget: { tokens: 1, usd: null } });
    // The repair was the one request: its tokens are the run's, and the check was held back (the
    // replay filed the application; unchecked, the run does not complete and leaves no cache).
    expect(repeat.requests).toHaveLength(1);
    expect(isRepair(repeat.requests[0]!)).toBe(true);
    expect(repeat.summary.document.usage.byModel).toEqual([expect.objectContaining({ requests: 1 })]);
    expect(repeat.events.some((e) => e.type === 'final_check')).toBe(false);
    expect(await cache.get(version, new AbortController().signal)).toEqual(before);
  });

  it('a replay that needs a repair beyond a dollar budget ends budget_exceeded: the second repair is never sent', async () => {
    const version = await seeded('v-budget-repair');
    app.options.renamed = ['birth'];
    app.options.relabelled = ['start'];
    const repeat = await run(version, input(7), { spec: { budget: { usd: 0.000001 } } });
    expect(repeat.summary.document).toMatchObject({ status: 'failed', error: { code: 'budget_exceeded', message: expect.stringContaining('$0.000001') } });
    expect(repeat.requests).toHaveLength(1);
    expect(isRepair(repeat.requests[0]!)).toBe(true);
    expect(repeat.events.filter((e) => e.type === 'step_repair')).toHaveLength(1);
    expect(repeat.summary.document.usage.estimatedCostUsd).toBeGreaterThan(0.000001);
  });

  it('the model taking a replay over counts: a flow that changed, the budget spent by the repair, no take-over request', async () => {
    const version = await seeded('v-budget-takeover');
    app.options.changedFlow = true;
    // The repair sees at once that the flow changed: one request, then the model would take over.
    const agent = flowAgent(input(8));
    const script: Script = (request) => (isRepair(request) ? turn(flowChanged('The pages after this one are new.')) : agent(request));
    const repeat = await run(version, input(8), { spec: { budget: { tokens: 1 } }, script });
    expect(repeat.summary.document).toMatchObject({ status: 'failed', error: { code: 'budget_exceeded' } });
    expect(repeat.requests).toHaveLength(1);
    expect(isRepair(repeat.requests[0]!)).toBe(true);
    expect(repeat.events.find((e) => e.type === 'step_repair')).toMatchObject({ outcome: 'flow_changed' });
  });
});
