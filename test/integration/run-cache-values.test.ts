/**
 * A replay never enters a value of the previous input (docs/run-cache.md#values-from-the-input),
 * on real parts: Redis, Chromium on a back-office app with every kind of field, the SDK against a
 * scripted model that fills what it is shown from the input it is given, by name as its prompt
 * says. Each scenario runs a version once with the model, then again with a changed input, and
 * checks what the app saved.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { lastObservation } from '../../demo/workflow.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { runCacheKey } from '../../src/domain/run-cache.js';
import type { RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { hostRules } from '../support/env.js';
import { startRecordsApp, type RecordsApp } from '../support/records-app.js';
import type { TestRedis } from '../support/redis.js';
import { startRunnerRig, type RunnerRig } from '../support/runner-rig.js';
import { isFinalCheck, isRepair, stepDone } from '../support/run-cache-requests.js';
import { finish, memberBlock, toolUse, turn, type RecordedRequest, type ScriptedTurn } from '../support/scripted-model-server.js';

const PREFIX = 'bull';
const QUEUE = 'cache-values-test';

let rig: RunnerRig<RecordsApp>;
let redis: TestRedis;
let cache: RedisRunCache;
let app: RecordsApp;

beforeAll(async () => {
  rig = await startRunnerRig({ name: 'run-cache-values', queue: QUEUE, app: startRecordsApp, hostRules: () => hostRules('records.test') });
  ({ redis, cache, app } = rig);
});

afterAll(async () => {
  await rig?.close();
});

beforeEach(() => {
  app.options.open = false;
  app.options.clampAmount = false;
  app.options.backlog = false;
});

interface Invoice {
  user: string;
  password: string;
  paid: boolean;
  amount: number;
  code: string;
  currency: string;
  due: string;
  quantity: string;
  copies: string;
  tier: string;
}

/** The first run's input: quantity and copies the same value, tier the same as the prompt's priority. */
const FIRST: Invoice = { user: 'ann', password: 'pw-Secret-1', paid: true, amount: 7, code: 'A', currency: 'EUR', due: '2026-03-04', quantity: '2', copies: '2', tier: '1' };

const WORKFLOW = (origin: string) => ({
  name: 'Complete an invoice',
  prompt: 'Sign in with the user from the input, open the invoice to complete, fill it from the input with Priority 1, and save it. Report the invoice number.',
  allowedDomains: ['records.test'],
  startUrl: `${origin}/`,
  payloadSchema: { type: 'object', properties: { password: { type: 'string', writeOnly: true } } },
  outputSchema: { type: 'object', required: ['invoice'], properties: { invoice: { type: 'string' } } },
});

/** The ref of the element a line names `"name" [ref_N]`, whatever its role. */
function refNamed(seen: string, name: string): { type: 'ref'; ref: string } {
  const found = new RegExp(`"${name}" \\[(ref_\\d+)\\]`).exec(seen);
  if (!found) throw new Error(`no "${name}" on the page:\n${seen.slice(0, 1500)}`);
  return { type: 'ref', ref: found[1]! };
}

/**
 * A model that fills whatever it is shown from its input, each value by its name: the sign-in
 * form, the invoice list, the invoice form, the saved page; the replay's final check; and, asked
 * to repair a replayed step, the same actions on the page it is shown, then step_done.
 */
function invoiceAgent() {
  return (request: RecordedRequest): ScriptedTurn => {
    const acted = invoiceTurn(request);
    if (!isRepair(request)) return acted;
    return turn(...('content' in acted ? acted.content.filter((b) => b.name !== 'finish') : []), stepDone());
  };
}

function invoiceTurn(request: RecordedRequest): ScriptedTurn {
  const seen = lastObservation(request.body).split('This is the browser now.').at(-1)!;
  const saved = /Invoice #(\d+) saved/.exec(seen);
  if (isFinalCheck(request)) return toolUse('verify_replay', saved ? { matches: true, reason: `Invoice #${saved[1]} is saved.`, output: { invoice: saved[1] } } : { matches: false, reason: 'Nothing was saved.' });
  if (saved) return finish('completed', { invoice: saved[1] });
  if (seen.includes('"User" [')) {
    return turn(
      memberBlock('form_input', { target: refNamed(seen, 'User'), value: '{{user}}' }),
      memberBlock('form_input', { target: refNamed(seen, 'Password'), value: '{{password}}' }),
      memberBlock('left_click', { target: refNamed(seen, 'Sign in') }),
      memberBlock('read_page', { filter: 'interactive' }),
    );
  }
  if (seen.includes('"Amount" [')) {
    const set = (name: string, value: string | number | boolean) => memberBlock('form_input', { target: refNamed(seen, name), value });
    return turn(
      set('Paid', '{{paid}}'),
      set('Amount', '{{amount}}'),
      set('Code', '{{code}}'),
      set('Currency', '{{currency}}'),
      set('Due date', '{{due}}'),
      set('Quantity', '{{quantity}}'),
      set('Copies', '{{copies}}'),
      // The prompt's own value, written by the model: a literal.
      set('Priority', '1'),
      set('Tier', '{{tier}}'),
      memberBlock('left_click', { target: refNamed(seen, 'Save') }),
      memberBlock('get_page_text'),
    );
  }
  const link = /link "(Invoice #\d+)"/.exec(seen)?.[1];
  if (link) return turn(memberBlock('left_click', { target: refNamed(seen, link) }), memberBlock('read_page', { filter: 'interactive' }));
  return finish('failed', undefined, `lost on the page: ${seen.slice(0, 300)}`);
}

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  events: Array<Record<string, unknown>>;
  saved?: Record<string, string>;
}

async function run(versionId: string, input: Invoice): Promise<Run> {
  const before = app.saved.length;
  const { summary, requests, events } = await rig.run(invoiceAgent(), { workflowId: 'wf-invoice', workflowVersionId: versionId, inputPayload: input, specification: WORKFLOW(app.origin) });
  expect(app.saved.length - before).toBeLessThanOrEqual(1);
  return { summary, requests, events, ...(app.saved.length > before ? { saved: app.saved.at(-1)! } : {}) };
}

/** What the app must have saved for an input: every value the input's, the priority the prompt's. */
const expected = (input: Invoice) => ({ paid: input.paid ? 'yes' : 'no', amount: String(input.amount), code: input.code, currency: input.currency, due: input.due, quantity: input.quantity, copies: input.copies, priority: '1', tier: input.tier });

async function stored(versionId: string): Promise<string> {
  const client = new Redis(redis.url);
  try {
    return (await client.get(runCacheKey(PREFIX, QUEUE, versionId))) ?? '';
  } finally {
    client.disconnect();
  }
}

describe('a replay with a changed input', () => {
  it('enters the new booleans, numbers, one-character values, choices and dates by name, on the record of the day; the prompt\'s own literal is redone by one repair', async () => {
    const first = await run('v-values', FIRST);
    expect(first.summary.document).toMatchObject({ status: 'completed', cache: { used: false } });
    expect(first.saved).toMatchObject(expected(FIRST));
    // Every value entered from the input is its name: none is stored as the value.
    const entry = JSON.parse(await stored('v-values')) as { steps: Array<Array<{ tool: string; input: { value?: unknown }; refs?: unknown }>> };
    const values = entry.steps.flat().filter((a) => a.tool === 'form_input').map((a) => a.input.value);
    expect(values).toEqual(['{{user}}', '{{password}}', '{{paid}}', '{{amount}}', '{{code}}', '{{currency}}', '{{due}}', '{{quantity}}', '{{copies}}', '1', '{{tier}}']);
    expect(entry.steps.flat().filter((a) => a.tool === 'form_input').map((a) => a.refs)).toContainEqual([['paid']]);
    expect(await stored('v-values')).not.toContain('pw-Secret-1');

    const second: Invoice = { user: 'bob', password: 'pw-Secret-2', paid: false, amount: 9, code: 'B', currency: 'USD', due: '2026-05-06', quantity: '2', copies: '2', tier: '1' };
    const repeat = await run('v-values', second);
    // The priority "1" the model wrote itself may depend on any input value, and the input changed: that step is
    // repaired (docs/run-cache.md#values-from-the-input); every other value is replayed by name.
    expect(repeat.requests.map(isRepair)).toEqual([true, false]);
    expect(isFinalCheck(repeat.requests[1]!)).toBe(true);
    // The invoice of the day is another number: its link and page match by shape.
    expect(repeat.summary.document).toMatchObject({ status: 'completed', output: { invoice: '1043' }, cache: { used: true, replayedSteps: 3, repairedSteps: 1, fallbackAtStep: null } });
    expect(repeat.saved).toEqual({ id: '1043', ...expected(second) });
  });

  it('replays values that two input paths shared, each by its name, when the new input parts them', async () => {
    await run('v-repeated', FIRST);
    const parted: Invoice = { ...FIRST, user: 'cy', quantity: '3', copies: '5' };
    const repeat = await run('v-repeated', parted);
    // The prompt's priority, a literal, is repaired (the input changed); the shared values are replayed by name.
    expect(repeat.summary.document).toMatchObject({ status: 'completed', cache: { used: true, replayedSteps: 3, repairedSteps: 1, fallbackAtStep: null } });
    expect(repeat.requests.map(isRepair)).toEqual([true, false]);
    expect(repeat.saved).toMatchObject(expected(parted));
  });

  it("lets the model enter a literal it wrote that equals an input value, when the new input changes that value", async () => {
    await run('v-prompt', FIRST);
    const changed: Invoice = { ...FIRST, tier: '3' };
    const repeat = await run('v-prompt', changed);
    // The priority "1" was the model's own; it equalled the tier: replayed only while the tier is "1". The model redid that step.
    expect(repeat.summary.document).toMatchObject({ status: 'completed', cache: { used: true, repairedSteps: 1, fallbackAtStep: null } });
    expect(repeat.summary.document.cache.reason).toContain('it enters a value the model wrote itself that may come from the input, and the new input differs at tier');
    expect(repeat.requests.map(isRepair)).toEqual([true, false]);
    // The prompt's priority stays 1; the tier is the new input's.
    expect(repeat.saved).toMatchObject({ ...expected(changed), priority: '1', tier: '3' });
  });

  it('stops where a field does not hold the value entered; a repair the page refuses too ends after 3 model steps, and the model takes over there', async () => {
    await run('v-rewrite', FIRST);
    app.options.clampAmount = true;
    const repeat = await run('v-rewrite', { ...FIRST, amount: 9 });
    expect(repeat.summary.document).toMatchObject({ status: 'completed', cache: { used: true, repairedSteps: 0, fallbackAtStep: 3 } });
    expect(repeat.summary.document.cache.reason).toContain('"Amount" does not hold the value the replay entered');
    const actions = repeat.events.filter((e) => e.type === 'action');
    // Paid and Amount were replayed; nothing after the amount was, until the repair came.
    const byCache = actions.filter((e) => e.by === 'cache').map((e) => String(e.label));
    expect(byCache.at(-1)).toContain('Amount');
    expect(actions.at(byCache.length)).toMatchObject({ by: 'repair' });
    // The page refused the repair's amount too, read back each time: after 3 model steps the model took the run over.
    const repaired = actions.filter((e) => e.by === 'repair' && String(e.label).includes('Amount'));
    expect(repaired.map((e) => [e.ok, e.error])).toEqual(Array(3).fill([false, expect.stringContaining('"Amount" does not hold the value')]));
    expect(repeat.events.find((e) => e.type === 'step_repair')).toMatchObject({ outcome: 'gave_up', modelSteps: 3, cachedStep: 3 });
    expect(actions.at(-1)).toMatchObject({ by: 'model' });
  });

  it('matches a name holding a record number by its shape only when one element has that shape', async () => {
    await run('v-shape', FIRST);
    app.options.backlog = true;
    const repeat = await run('v-shape', { ...FIRST, user: 'fay' });
    // Two links of that shape: the replay guesses nothing, and the model picks one. The prompt's priority, a
    // literal, is repaired too: the input changed.
    expect(repeat.summary.document).toMatchObject({ status: 'completed', cache: { used: true, repairedSteps: 2, fallbackAtStep: null } });
    expect(repeat.summary.document.cache.reason).toMatch(/no link "Invoice #\d+" on the page/);
    expect(repeat.requests.map(isRepair)).toEqual([true, true, false]);
  });

  it('starts past the pages the run is already past (signed in already) instead of handing over to the model', async () => {
    await run('v-later', FIRST);
    app.options.open = true;
    const second: Invoice = { ...FIRST, user: 'dee', paid: false, amount: 4, code: 'Z', currency: 'GBP', due: '2027-01-31' };
    const repeat = await run('v-later', second);
    // The prompt's priority, a literal, is repaired (the input changed): one request besides the final check.
    expect(repeat.requests.map(isRepair)).toEqual([true, false]);
    expect(repeat.summary.document).toMatchObject({ status: 'completed', cache: { used: true, replayedSteps: 2, repairedSteps: 1, fallbackAtStep: null } });
    expect(repeat.summary.document.cache.reason).toContain('the replay started at step 2');
    expect(repeat.saved).toMatchObject(expected(second));
  });

  it('never replays an entry of an earlier format, which tied values to the input by equality or kept them as literals', async () => {
    await run('v-old', FIRST);
    const entry = JSON.parse(await stored('v-old')) as Record<string, unknown>;
    for (const [format, why] of [
      ['execution-worker/run-cache@3', 'guarded only the literals it recognised as written from the input'],
      ['execution-worker/run-cache@2', 'tied values to the input by equality'],
      ['execution-worker/run-cache@1', 'may hold input values as literals'],
    ]) {
      await cache.put('v-old', { ...entry, format });
      const second: Invoice = { ...FIRST, user: 'eve', paid: false, amount: 8, code: 'Q' };
      const repeat = await run('v-old', second);
      expect(repeat.summary.document).toMatchObject({ status: 'completed', cache: { used: false, reason: `the cached run is of an earlier format (${format}) that ${why}: it is not replayed` } });
      expect(repeat.saved).toMatchObject(expected(second));
      expect(JSON.parse(await stored('v-old'))).toMatchObject({ format: 'execution-worker/run-cache@4' });
    }
  });
});
