/**
 * The run cache (docs/run-cache.md) on real parts: Redis (the fleet's store), Chromium on the demo
 * shop, the SDK against a scripted model. A run with the model leaves the version's cache; the
 * next run of the version replays it with a new input, and its one model request is the check of
 * the final page; a changed page makes the replay stop there and the model finish; a cache of
 * another version or specification is never replayed; secrets are never stored.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startShopServer, type ShopServer } from '../../demo/shop-server.js';
import { DEMO_COMPUTER_CALLS, DEMO_WORKFLOW, asComputerMember, lastObservation, refIn } from '../../demo/workflow.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { runCacheKey } from '../../src/domain/run-cache.js';
import type { RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { hostRules } from '../support/env.js';
import type { TestRedis } from '../support/redis.js';
import { startRunnerRig, type RunnerRig } from '../support/runner-rig.js';
import { isRepair, repairBrief, stepDone } from '../support/run-cache-requests.js';
import { calls, finish, memberBlock, toolUse, turn, type RecordedRequest, type Script, type ScriptedTurn } from '../support/scripted-model-server.js';

const PREFIX = 'bull';
const QUEUE = 'cache-test';

let rig: RunnerRig<ShopServer>;
let redis: TestRedis;
let cache: RedisRunCache;
let shop: ShopServer;
let config: Config;

beforeAll(async () => {
  rig = await startRunnerRig({ name: 'run-cache', queue: QUEUE, app: () => startShopServer('shop.test', { sequentialOrders: true }), hostRules: () => hostRules('shop.test') });
  ({ redis, cache, app: shop, config } = rig);
});

afterAll(async () => {
  await rig?.close();
});

const input = (user: string, password: string, reference: string) => ({ user, password, reference });

/** The replay's final check (its one tool is `verify_replay`), answered from the confirmation it is shown. */
function finalCheck(request: RecordedRequest): ScriptedTurn | undefined {
  const tools = (request.body as { tools?: Array<{ name?: string }> }).tools ?? [];
  if (tools.length !== 1 || tools[0]!.name !== 'verify_replay') return undefined;
  const confirmed = /Order (\S+) confirmed/.exec(lastObservation(request.body))?.[1];
  return toolUse('verify_replay', confirmed ? { matches: true, reason: `Order ${confirmed} is confirmed.`, output: { orderId: confirmed } } : { matches: false, reason: 'No order is confirmed.' });
}

/**
 * A model that acts on what it is shown, wherever the run is: the sign-in form, the order form
 * (whatever its button is called), the confirmation. It answers a resumed run as well as a fresh
 * one, and enters the input's values by name, as its prompt says.
 */
function shopAgent(values: { user: string; reference: string }) {
  return (request: RecordedRequest): ScriptedTurn => {
    const check = finalCheck(request);
    if (check) return check;
    const acted = shopTurn(request, values);
    if (!isRepair(request)) return acted;
    // Asked to repair a replayed step: the same actions on the page shown, then step_done.
    return turn(...('content' in acted ? acted.content.filter((b) => b.name !== 'finish') : []), stepDone());
  };
}

/** What the shop's model does on the page it is shown. */
function shopTurn(request: RecordedRequest, values: { user: string; reference: string }): ScriptedTurn {
  // A resumed run first says what was replayed: the page is what follows.
  const seen = lastObservation(request.body).split('This is the browser now.').at(-1)!;
  const ref = (role: string, name: string) => ({ type: 'ref', ref: refIn(seen, role, name) });
  const confirmed = /Order (\S+) confirmed/.exec(seen);
  if (confirmed) return finish('completed', { orderId: confirmed[1] });
  if (seen.includes('textbox "User"')) {
    return turn(
      memberBlock('form_input', { target: ref('textbox', 'User'), value: byName(request, 'user', values.user) }),
      memberBlock('form_input', { target: ref('textbox', 'Password'), value: '{{password}}' }),
      memberBlock('left_click', { target: ref('button', 'Sign in') }),
      memberBlock('read_page', { filter: 'interactive' }),
    );
  }
  if (seen.includes('textbox "Reference"')) {
    const button = seen.includes('button "Submit order"') ? 'Submit order' : 'Place order';
    return turn(
      memberBlock('form_input', { target: ref('textbox', 'Reference'), value: byName(request, 'reference', values.reference) }),
      memberBlock('left_click', { target: ref('button', button) }),
      memberBlock('get_page_text'),
    );
  }
  return finish('failed', undefined, `lost on the page: ${seen.slice(0, 200)}`);
}

/** An input value as the model enters it: by its name when the worker's prompt lists names. */
function byName(request: RecordedRequest, name: string, value: string): string {
  const system = JSON.stringify((request.body as { system?: unknown }).system ?? '');
  return system.includes(`{{${name}}} =`) ? `{{${name}}}` : value;
}

interface CachedRun {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  events: Array<Record<string, unknown>>;
}

async function run(options: { site: ShopServer; versionId: string; payload: ReturnType<typeof input>; spec?: Record<string, unknown>; env?: Record<string, string>; script?: Script }): Promise<CachedRun> {
  const runConfig = { ...config, ...loadConfig({ ...Object.fromEntries(Object.entries(config).map(([k, v]) => [k, String(v)])), ...options.env }) };
  const specification = { ...DEMO_WORKFLOW(`${options.site.origin}/`), ...options.spec };
  const { summary, requests, events } = await rig.run(options.script ?? shopAgent(options.payload), { workflowId: 'wf-shop', workflowVersionId: options.versionId, inputPayload: options.payload, specification }, runConfig);
  return { summary, requests, events };
}

async function withClient<T>(use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(redis.url);
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

const storedCache = (versionId: string): Promise<string | null> => withClient((client) => client.get(runCacheKey(PREFIX, QUEUE, versionId)));

describe('run cache', () => {
  it('replays a completed run with a new input; the shop gets the new values, and the final check is the one model request and reads the output', async () => {
    const first = await run({ site: shop, versionId: 'v-replay', payload: input('ann', 'first-Secret-1', 'PO-778') });
    expect(first.summary.document).toMatchObject({ status: 'completed', output: { orderId: 'A-1001' }, cache: { used: false, modelSteps: 3, replayedSteps: 0 } });
    const stored = await storedCache('v-replay');
    expect(stored).not.toBeNull();
    // Input values as their names, secrets never: not as values, not at all.
    expect(stored).toContain('"value":"{{reference}}"');
    expect(stored).toContain('"refs":[["reference"]]');
    expect(stored).toContain('"refs":[["user"]]');
    expect(stored).not.toContain('PO-778');
    expect(stored).not.toContain('first-Secret-1');

    const formsBefore = shop.forms.length;
    // Far from expiring now; a use brings it back to RUN_CACHE_TTL_MS (60 s here) from now.
    await withClient((client) => client.pexpire(runCacheKey(PREFIX, QUEUE, 'v-replay'), 10 * 86_400_000));
    const second = await run({ site: shop, versionId: 'v-replay', payload: input('bob', 'second-Secret-2', 'PO-999') });
    expect(second.requests).toHaveLength(1);
    expect(finalCheck(second.requests[0]!)).toBeDefined();
    // The check sees the input by name, never a secret.
    expect(second.requests[0]!.rawBody).toContain('{{reference}} = \\"PO-999\\"');
    expect(second.requests[0]!.rawBody).not.toContain('second-Secret-2');
    const ttl = await withClient((client) => client.pttl(runCacheKey(PREFIX, QUEUE, 'v-replay')));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(second.summary.document).toMatchObject({
      status: 'completed',
      output: { orderId: 'A-1002' },
      cache: { used: true, replayedSteps: 2, modelSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } },
      // A replayed step is a step, a replayed action an action; the final check is no step, its screenshot went to the model.
      counters: { nSteps: 2, nAgentActions: 5, nScreenshots: 1 },
    });
    expect(second.summary.document.usage.inputTokens).toBeGreaterThan(0);
    expect(shop.forms.slice(formsBefore)).toEqual([
      { path: '/login', fields: { user: 'bob', password: 'second-Secret-2' } },
      { path: '/order', fields: { reference: 'PO-999', quantity: '1' } },
    ]);
    const actions = second.events.filter((e) => e.type === 'action');
    expect(actions.length).toBeGreaterThan(0);
    expect(actions.every((e) => e.by === 'cache')).toBe(true);
    expect(JSON.stringify(second.events)).not.toContain('second-Secret-2');
  });

  it('repairs the step whose page changed (a renamed and moved button) with one model request, resumes, and keeps the repaired run as the cache', async () => {
    await run({ site: shop, versionId: 'v-changed', payload: input('ann', 'pw-Secret-3', 'PO-100') });
    // The site changes under the same workflow: its order button is renamed and moved.
    shop.options.renamedButton = true;
    const changed = await run({ site: shop, versionId: 'v-changed', payload: input('cy', 'pw-Secret-4', 'PO-200') });
    const { document } = changed.summary;
    expect(document.status, JSON.stringify({ error: document.error, cache: document.cache })).toBe('completed');
    // The repair and the final check: two requests; the repair is one step of the run.
    expect(changed.requests.map(isRepair)).toEqual([true, false]);
    expect(finalCheck(changed.requests[1]!)).toBeDefined();
    expect(document.cache).toMatchObject({ used: true, replayedSteps: 2, repairedSteps: 1, modelSteps: 1, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
    expect(document.cache.reason).toContain('no button "Place order" on the page');
    // The repair was told what the step was for, as the earlier run saw it; it never saw a secret.
    const brief = repairBrief(changed.requests[0]!);
    expect(brief).toContain('At its step 2 of 2 the page no longer matches what that run saw: no button "Place order" on the page.');
    expect(brief).toContain('1. left_click on button "Place order"');
    expect(changed.requests[0]!.rawBody).not.toContain('pw-Secret-4');
    expect(shop.forms.at(-1)).toEqual({ path: '/order', fields: { reference: 'PO-200', quantity: '1' } });
    const steps = changed.events.filter((e) => e.type === 'action').map((e) => e.by);
    expect(steps.slice(0, 4)).toEqual(['cache', 'cache', 'cache', 'cache']);
    expect(steps.at(-1)).toBe('repair');
    expect(changed.events.find((e) => e.type === 'step_repair')).toMatchObject({ cachedStep: 2, outcome: 'resumed', before: ['left_click on button "Place order"'], after: [expect.stringContaining('{{reference}}'), expect.stringContaining('Submit order')] });

    // The repaired run is the cache now: the renamed shop replays with no model but the final check.
    expect(await storedCache('v-changed')).toContain('Submit order');
    const again = await run({ site: shop, versionId: 'v-changed', payload: input('dee', 'pw-Secret-5', 'PO-300') });
    shop.options.renamedButton = false;
    expect(again.requests).toHaveLength(1);
    expect(again.summary.document.cache).toMatchObject({ used: true, fallbackAtStep: null, modelSteps: 0, repairedSteps: 0, finalCheck: { ran: true, matches: true } });
    expect(shop.forms.at(-1)).toEqual({ path: '/order', fields: { reference: 'PO-300', quantity: '1' } });
  });

  it('never replays a cache made for another version, another specification, or a page that no longer matches', async () => {
    await run({ site: shop, versionId: 'v-one', payload: input('ann', 'pw-Secret-6', 'PO-1') });
    const otherVersion = await run({ site: shop, versionId: 'v-two', payload: input('ann', 'pw-Secret-6', 'PO-2') });
    expect(otherVersion.summary.document.cache).toMatchObject({ used: false, reason: 'no cached run of this version yet' });
    expect(otherVersion.requests.length).toBeGreaterThan(0);

    const otherSpec = await run({ site: shop, versionId: 'v-one', payload: input('ann', 'pw-Secret-6', 'PO-3'), spec: { prompt: 'Place an order, and be quick about it.' } });
    expect(otherSpec.summary.document.cache).toMatchObject({ used: false, reason: 'the cached run was made for another specification' });

    // The same version, its start page now elsewhere on the site: nothing is acted on there.
    await run({ site: shop, versionId: 'v-moved', payload: input('ann', 'pw-Secret-6', 'PO-4') });
    const formsBefore = shop.forms.length;
    const moved = await run({ site: shop, versionId: 'v-moved', payload: input('ann', 'pw-Secret-6', 'PO-5'), spec: { startUrl: `${shop.origin}/orders` } });
    expect(moved.summary.document.cache).toMatchObject({ used: false, reason: 'the cached run was made for another specification' });
    expect(shop.forms.slice(formsBefore).map((f) => f.path)).toEqual(['/order']);
  });

  it('does not act on a page whose shape differs, even under the same specification: that step is repaired', async () => {
    await run({ site: shop, versionId: 'v-shape', payload: input('ann', 'pw-Secret-7', 'PO-6') });
    // Tamper with the stored run: its first step now expects another page.
    const stored = JSON.parse((await storedCache('v-shape'))!) as { steps: Array<Array<{ page: string }>> };
    stored.steps[0]![0]!.page = `${shop.origin}/elsewhere`;
    await cache.put('v-shape', stored);
    const formsBefore = shop.forms.length;
    const r = await run({ site: shop, versionId: 'v-shape', payload: input('ann', 'pw-Secret-7', 'PO-7') });
    expect(r.summary.document.cache).toMatchObject({ used: true, repairedSteps: 1, fallbackAtStep: null });
    expect(r.summary.document.cache.reason).toContain('where the earlier run was on');
    // The repaired step signs in: its password is named in the request, never given.
    const repair = r.requests.find(isRepair)!;
    expect(repairBrief(repair)).toContain('form_input on textbox "Password" (input type=password, id "password", name "password"): value "{{password}}"');
    expect(repair.rawBody).not.toContain('pw-Secret-7');
    // Nothing was replayed on that page: the model redid the step there, and the replay went on at the next one.
    const actions = r.events.filter((e) => e.type === 'action');
    expect(actions[0]).toMatchObject({ by: 'repair' });
    expect(actions.at(-1)).toMatchObject({ by: 'cache' });
    expect(r.summary.document.status).toBe('completed');
    expect(shop.forms.slice(formsBefore).map((f) => f.path)).toEqual(['/login', '/order']);
  });

  it('is neither read nor written with cache: false, nor with RUN_CACHE=off', async () => {
    await run({ site: shop, versionId: 'v-off', payload: input('ann', 'pw-Secret-8', 'PO-8'), spec: { cache: false } });
    expect(await storedCache('v-off')).toBeNull();
    await run({ site: shop, versionId: 'v-off', payload: input('ann', 'pw-Secret-8', 'PO-8'), env: { RUN_CACHE: 'off' } });
    expect(await storedCache('v-off')).toBeNull();
    await run({ site: shop, versionId: 'v-off', payload: input('ann', 'pw-Secret-8', 'PO-8') });
    const optedOut = await run({ site: shop, versionId: 'v-off', payload: input('ann', 'pw-Secret-8', 'PO-9'), spec: { cache: false } });
    expect(optedOut.summary.document.cache.used).toBe(false);
    expect(optedOut.requests.length).toBeGreaterThan(0);
  });

  it('replays a version whose id begins like a secret of the input: the entry keeps its own id, not a redaction of it', async () => {
    // The password begins with the version id's first 8 characters, a piece redaction replaces anywhere else.
    const first = await run({ site: shop, versionId: 'release-7-v1', payload: input('ann', 'release-7-Secret', 'PO-31') });
    expect(first.summary.document).toMatchObject({ status: 'completed', cache: { used: false } });
    const stored = JSON.parse((await storedCache('release-7-v1'))!) as { versionId: string };
    expect(stored.versionId).toBe('release-7-v1');
    expect(JSON.stringify(stored)).not.toContain('release-7-Secret');
    const second = await run({ site: shop, versionId: 'release-7-v1', payload: input('bob', 'release-7-Secret', 'PO-32') });
    expect(second.summary.document.cache, second.summary.document.cache.reason ?? '').toMatchObject({ used: true, modelSteps: 0 });
    expect(second.requests).toHaveLength(1);
  });

  it('replays computer use too: each click at where its element is now, typing where the focus was', async () => {
    // A shop of its own: the scripted first run reports the first order's id, A-1001.
    const own = await startShopServer('shop.test', { sequentialOrders: true });
    try {
      await computerReplay(own);
    } finally {
      await own.close();
    }
  });
});

async function computerReplay(shop: ShopServer): Promise<void> {
  {
    // The demo's calls, with the input's values entered by name as the prompt asks.
    const names: Record<string, string> = { ann: '{{user}}', 'PO-778': '{{reference}}' };
    const script = DEMO_COMPUTER_CALLS.map((call) => calls([asComputerMember(typeof call.input.text === 'string' && names[call.input.text] ? { ...call, input: { ...call.input, text: names[call.input.text] } } : call)]));
    const first = await run({ site: shop, versionId: 'v-computer', payload: input('ann', 'pw-Secret-9', 'PO-778'), spec: { model: 'claude-sonnet-5-5', toolset: 'computer' }, script });
    expect(first.summary.document).toMatchObject({ status: 'completed', cache: { used: false, modelSteps: 9 } });
    const formsBefore = shop.forms.length;
    const second = await run({ site: shop, versionId: 'v-computer', payload: input('bob', 'pw-Secret-10', 'PO-4242'), spec: { model: 'claude-sonnet-5-5', toolset: 'computer' }, script: (request) => finalCheck(request) ?? finish('failed', undefined, 'not the final check') });
    expect(second.requests).toHaveLength(1);
    expect(second.summary.document).toMatchObject({ status: 'completed', cache: { used: true, replayedSteps: 8, modelSteps: 0 } });
    expect((second.summary.document.output as { orderId: string }).orderId).toMatch(/^A-\d{4}$/);
    expect((second.summary.document.output as { orderId: string }).orderId).not.toBe((first.summary.document.output as { orderId: string }).orderId);
    expect(shop.forms.slice(formsBefore)).toEqual([
      { path: '/login', fields: { user: 'bob', password: 'pw-Secret-10' } },
      { path: '/order', fields: { reference: 'PO-4242', quantity: '1' } },
    ]);

    // A repair in computer use: the request carries the computer toolset with step_done and
    // flow_changed, and meets the API's rules; a flow the model finds changed goes to the model.
    const tampered = JSON.parse((await storedCache('v-computer'))!) as { steps: Array<Array<{ page: string }>> };
    tampered.steps[0]![0]!.page = `${shop.origin}/elsewhere`;
    await cache.put('v-computer-repair', { ...tampered, versionId: 'v-computer-repair' });
    const takeOver = [...script];
    const repaired = await run({
      site: shop,
      versionId: 'v-computer-repair',
      payload: input('cy', 'pw-Secret-11', 'PO-5151'),
      spec: { model: 'claude-sonnet-5-5', toolset: 'computer' },
      script: (request) => (isRepair(request) ? toolUse('flow_changed', { reason: 'The sign-in is not where the earlier run found it.' }) : (finalCheck(request) ?? takeOver.shift()!)),
    });
    const tools = ((repaired.requests[0]!.body as { tools: Array<{ type?: string; name?: string }> }).tools).map((t) => t.name ?? t.type);
    expect(tools).toEqual(['computer_toolset_20260801', 'navigate', 'step_done', 'flow_changed']);
    // The first cached step is not on the start page, the second is: the replay begins there, and stops (nothing is focused to type into).
    expect(repaired.summary.document).toMatchObject({ status: 'completed', cache: { used: true, repairedSteps: 0, fallbackAtStep: 2 } });
    expect(repaired.summary.document.cache.reason).toContain('the flow has changed: The sign-in is not where the earlier run found it.');
    expect(shop.forms.at(-1)).toEqual({ path: '/order', fields: { reference: 'PO-5151', quantity: '1' } });
  }
}
