/**
 * A repeat from the run cache in computer use (docs/run-cache.md#sources): a ledger form driven
 * by coordinates (test/support/ledger-app.ts), on real parts — Redis, Chromium, the SDK against
 * a scripted model. The first run types each value after a click on its field: two by name, a
 * date and an amount written out in the prompt's formats (derivations of one input value each),
 * and the prompt's own account (a constant). A repeat with an input that differs in every field
 * must save exactly that input, with the final check as its one request.
 */
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createBrowser, createRunnerDeps } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createRedisRunCache, type RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { hostRules, tempDir } from '../support/env.js';
import { FIRST_ENTRY, SECOND_ENTRY, ledgerAgent, ledgerRecord, ledgerWorkflow, startLedgerApp, type LedgerApp, type LedgerInput } from '../support/ledger-app.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startScriptedModelServer, type RecordedRequest } from '../support/scripted-model-server.js';

const logger = createSilentLogger();

let redis: TestRedis;
let cache: RedisRunCache;
let app: LedgerApp;
let browser: BrowserSandbox;
let dir: string;
let config: Config;

beforeAll(async () => {
  [redis, app, dir] = await Promise.all([startRedis(), startLedgerApp(), tempDir('run-cache-computer')]);
  config = loadConfig({ ANTHROPIC_API_KEY: 'sk-test', BROWSER_HOST_RULES: hostRules(app.host), WORK_DIR: dir, VIDEO_ENABLED: 'false', LOG_LEVEL: 'silent' });
  cache = createRedisRunCache({ redisUrl: redis.url, prefix: 'bull', queue: 'cache-computer-test', ttlMs: 60_000, logger });
  browser = createBrowser(config, logger);
});

afterAll(async () => {
  await browser?.close();
  await cache?.close();
  await Promise.allSettled([redis?.stop(), app?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  inputTokens: number;
  events: Array<Record<string, unknown>>;
  saved: Array<Record<string, string>>;
}

async function run(versionId: string, input: LedgerInput): Promise<Run> {
  const before = app.saved.length;
  const model = await startScriptedModelServer(ledgerAgent(input, () => (app.saved.length > before ? String(app.saved.length) : undefined)));
  try {
    const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir, prefix: '' }), runCache: cache });
    const summary = await runExecution(deps, { executionId: randomUUID(), workflowId: 'wf-ledger', workflowVersionId: versionId, inputPayload: input, specification: ledgerWorkflow(app.origin, app.host) }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const logs = await readFile(fileURLToPath(summary.urls.logsUrl!), 'utf8');
    const inputTokens = model.accounting.reduce((sum, a) => sum + (a?.total ?? 0), 0);
    return { summary, requests: model.requests, inputTokens, events: logs.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>), saved: app.saved.slice(before) };
  } finally {
    await model.stop();
  }
}

const explain = (r: Run) => JSON.stringify({ error: r.summary.document.error, cache: r.summary.document.cache, stops: r.events.filter((e) => ['replay_stopped', 'step_repair'].includes(String(e.type))).map((e) => e.reason) });

describe('a computer-use repeat from the run cache', () => {
  it('repeats an input that differs in every field with the final check alone (≤ 2 requests, ≤ 0.15× the tokens), typing each value from its source where its field is now', async () => {
    const first = await run('v-ledger', FIRST_ENTRY);
    expect(first.summary.document, explain(first)).toMatchObject({ status: 'completed', output: { entry: '1' }, cache: { used: false } });
    expect(first.saved).toEqual([ledgerRecord(FIRST_ENTRY)]);

    const second = await run('v-ledger', SECOND_ENTRY);
    expect(second.summary.document, explain(second)).toMatchObject({ status: 'completed', output: { entry: '2' }, cache: { used: true, fallbackAtStep: null, finalCheck: { ran: true, matches: true } } });
    // Exactly the new input: the new date and amount in the prompt's formats, the prompt's account.
    expect(second.saved).toEqual([ledgerRecord(SECOND_ENTRY)]);
    expect(second.requests.length, explain(second)).toBeLessThanOrEqual(2);
    expect(second.inputTokens, explain(second)).toBeLessThanOrEqual(0.15 * first.inputTokens);
    // What the replay typed: never a value of the first input.
    const typed = second.events.filter((e) => e.type === 'action').map((e) => JSON.stringify(e.input ?? {}));
    for (const old of [FIRST_ENTRY.payee, FIRST_ENTRY.memo, ledgerRecord(FIRST_ENTRY).date, ledgerRecord(FIRST_ENTRY).amount]) expect(typed.filter((t) => t.includes(old!))).toEqual([]);
  }, 180_000);
});
