/**
 * The run cache on DokuWiki (docs/testing.md, docs/run-cache.md#on-a-wiki): Debian's DokuWiki
 * (test/support/real-apps/dokuwiki.ts) driven through the daemon (BullMQ and the run cache in
 * real Redis, Chromium, the SDK against a scripted model that acts on what the worker shows it,
 * test/support/real-apps/wiki-agent.ts). A first run signs in, replaces a page's text with
 * several lines and saves it with a summary; a repeat whose text and summary both differ (the
 * same user signs in to the same page) must save exactly the new ones, with no repaired step,
 * in at most 2 model requests and 0.15× the first run's input tokens. The wiki's own files say
 * what was saved, and by whom.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../support/env.js';
import { startRecordingApi, type RecordingApi } from '../../support/recording-api.js';
import { startRedis, type TestRedis } from '../../support/redis.js';
import { startDokuWiki, type DokuWiki } from '../../support/real-apps/dokuwiki.js';
import { wikiAgent, wikiWorkflow, type WikiEdit } from '../../support/real-apps/wiki-agent.js';
import { lastUserText, type RequestBody } from '../../support/real-apps/request-read.js';
import { startRealAppWorker, type FinishedRun, type RealAppWorker } from '../../support/real-apps/worker-daemon.js';
import { isFinalCheck, isRepair } from '../../support/run-cache-requests.js';

const ALICE = { login: 'alice', password: 'wiki-Pa55word', name: 'Alice Smith' };
const PAGE = 'ops:runbook';
const BEFORE = '====== Payments runbook ======\n\nRestart the payments service.\n';

/** An edit for the first run, and another whose text and summary differ from it in every line. */
const FIRST: Omit<WikiEdit, 'password'> = {
  user: ALICE.login,
  page: PAGE,
  text: '====== Payments runbook ======\n\n===== When checkout fails =====\n\n  - Check the EU card gateway: <code>payments-eu</code>\n  - Restart the payments service\n  - Tell the //on-call// lead\n\n<code bash>\nsystemctl restart payments\n</code>\n',
  summary: 'Steps for checkout failures',
};
const SECOND: Omit<WikiEdit, 'password'> = {
  user: ALICE.login,
  page: PAGE,
  text: '====== Billing on-call guide ======\n\n===== Refunds stuck in pending =====\n\n  * Open the **refunds** queue and sort by age\n  * Retry each refund older than an hour\n\n===== Escalation =====\n\nPage the billing lead after 30 minutes.\n\n<code>\nbilling-cli refunds retry --older-than 1h\n</code>\n',
  summary: 'Rewritten for the billing rota, refunds first',
};

let redis: TestRedis;
let api: RecordingApi;
let wiki: DokuWiki;
let dir: string;
let worker: RealAppWorker;

beforeAll(async () => {
  [redis, api, wiki, dir] = await Promise.all([startRedis(), startRecordingApi(), startDokuWiki({ users: [ALICE], pages: { [PAGE]: BEFORE } }), tempDir('dokuwiki-replay')]);
  worker = await startRealAppWorker({ redisUrl: redis.url, api, hostRules: wiki.hostRules, dir });
}, 240_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.allSettled([redis?.stop(), api?.close(), wiki?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Edited {
  run: FinishedRun;
  explain: string;
}

async function edit(versionId: string, edit: Omit<WikiEdit, 'password'>): Promise<Edited> {
  const input: WikiEdit = { ...edit, password: ALICE.password };
  const agent = wikiAgent(input);
  const run = await worker.run({ workflowVersionId: versionId, inputPayload: input, specification: wikiWorkflow(wiki.origin, wiki.host, input.page) }, agent.script);
  const actions = run.events.filter((e) => e.type === 'action').map((e) => `${String(e.by)}: ${String(e.label ?? e.action)}${e.ok === false ? ` (failed: ${String(e.error)})` : ''}`);
  const repairs = run.events.filter((e) => e.type === 'step_repair').map((e) => JSON.stringify(e));
  const checked = run.requests.filter(isFinalCheck).map((r) => lastUserText(r.body as RequestBody).slice(0, 3000));
  const explain = `${figures('this run', run)}\nagent: ${agent.turns.join(' → ')}\noutput.json: ${JSON.stringify({ status: run.output.status, output: run.output.output, error: run.output.error, cache: run.output.cache })}\nactions:\n${actions.join('\n')}\nrepairs:\n${repairs.join('\n')}\nchanges: ${JSON.stringify(await wiki.changes(input.page))}\nfinal check saw: ${checked.join('\n---\n')}`;
  return { run, explain };
}

function figures(label: string, run: FinishedRun): string {
  return `${label}: ${run.requests.length} requests (${run.requests.filter(isRepair).length} repairs, ${run.requests.filter(isFinalCheck).length} final checks), ${run.inputTokens} input tokens, ${(run.wallMs / 1000).toFixed(1)} s`;
}

describe('a replay on DokuWiki', () => {
  it('repeats an edit whose text and summary differ with no repair, in ≤ 2 requests and ≤ 0.15× the tokens, and saves exactly the new text and summary', { timeout: 900_000 }, async () => {
    const first = await edit('v-wiki', FIRST);
    expect(first.run.output, first.explain).toMatchObject({ status: 'completed', cache: { used: false }, output: { page: PAGE } });
    // DokuWiki keeps the text as sent, line for line (it only ends it with one line break).
    expect((await wiki.page(PAGE))?.trimEnd(), first.explain).toBe(FIRST.text.trimEnd());
    expect((await wiki.changes(PAGE)).at(-1), first.explain).toEqual({ type: 'E', user: ALICE.login, summary: FIRST.summary });
    expect(first.run.events.some((e) => e.type === 'run_cache_saved'), first.explain).toBe(true);

    const changes = (await wiki.changes(PAGE)).length;
    const second = await edit('v-wiki', SECOND);
    expect(second.run.output.cache, second.explain).toMatchObject({ used: true });
    // Never completed with a page that differs from its input: what the wiki saved is the new text and summary, once.
    expect((await wiki.page(PAGE))?.trimEnd(), second.explain).toBe(SECOND.text.trimEnd());
    expect((await wiki.changes(PAGE)).slice(changes), second.explain).toEqual([{ type: 'E', user: ALICE.login, summary: SECOND.summary }]);
    expect(second.run.output, second.explain).toMatchObject({ status: 'completed', output: { page: PAGE } });
    // Replayed whole: the sign-in, the editor's link and the save need no model step; the final check alone asks the model.
    expect(second.run.output.cache, second.explain).toMatchObject({ repairedSteps: 0, modelSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
    expect(second.run.events.filter((e) => e.type === 'action' && e.by !== 'cache'), second.explain).toEqual([]);
    expect(second.run.requests.filter(isRepair), second.explain).toEqual([]);
    expect(second.run.requests.length, second.explain).toBeLessThanOrEqual(2);
    expect(second.run.inputTokens, second.explain).toBeLessThanOrEqual(0.15 * first.run.inputTokens);
    console.log([figures('dokuwiki, first run', first.run), figures('repeat, new text and summary', second.run), `ratio ${(second.run.inputTokens / first.run.inputTokens).toFixed(3)}`].join('\n'));
  });
});
