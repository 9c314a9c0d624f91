/**
 * A browser profile and the run cache together (docs/profiles.md, docs/run-cache.md#replay): a
 * version's cached run was recorded with a sign-in (user, password, TOTP code); the next
 * execution starts signed in from the profile, so the replay begins at the first step whose page
 * matches, past the sign-in's steps: no model request, no sign-in request. Real Chromium, the run
 * cache in real Redis, the SDK against the scripted model server.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastObservation, refIn } from '../../demo/workflow.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createBrowser, createRunnerDeps } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createLocalProfileStore } from '../../src/storage/profile-store.js';
import { createRedisRunCache, type RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';
import { TOTP_SEED, TOTP_USER } from '../support/files-site.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { finish, memberBlock, startScriptedModelServer, toolUse, turn, type RecordedRequest, type ScriptedTurn } from '../support/scripted-model-server.js';
import { SIGN_IN_PASSWORD, startSignInSite, type SignInSite } from '../support/sign-in-site.js';

const logger = createSilentLogger();
const ring = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);

const WORKFLOW = (origin: string) => ({
  prompt: 'Sign in with the user, password and code from the input when asked, open the notes, save the note from the input, and report the saved note.',
  allowedDomains: ['app.test'],
  startUrl: `${origin}/account`,
  profile: 'tenant-a.notes',
  payloadSchema: {
    type: 'object',
    required: ['user', 'password', 'mfa', 'note'],
    properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true }, mfa: { type: 'string', format: 'totp', 'x-secret': true }, note: { type: 'string' } },
  },
  outputSchema: { type: 'object', required: ['saved'], properties: { saved: { type: 'string' } } },
});

let redis: TestRedis;
let cache: RedisRunCache;
let site: SignInSite;
let browser: BrowserSandbox;
let dir: string;
let config: Config;

beforeAll(async () => {
  [redis, site, dir] = await Promise.all([startRedis(), startSignInSite(), tempDir('profiles-run-cache')]);
  config = loadConfig({ ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_MAX_RETRIES: '0', BROWSER_HOST_RULES: site.hostRules, WORK_DIR: path.join(dir, 'work'), VIDEO_ENABLED: 'false', LOG_LEVEL: 'silent' });
  cache = createRedisRunCache({ redisUrl: redis.url, prefix: 'bull', queue: 'profiles-cache-test', ttlMs: 60_000, logger });
  browser = createBrowser(config, logger);
});

afterAll(async () => {
  await browser?.close();
  await cache?.close();
  await Promise.allSettled([redis?.stop(), site?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const ref = (seen: string, role: string, name: string) => ({ type: 'ref', ref: refIn(seen, role, name) });

/**
 * A model that does what the page it is shown asks, entering the input's values by name: signs in,
 * opens the notes, saves the note, reports it; and answers the replay's final check.
 */
function notesAgent() {
  return (request: RecordedRequest): ScriptedTurn => {
    const seen = lastObservation(request.body).split('This is the browser now.').at(-1)!;
    const saved = /Note saved: ([^\s"]+)/.exec(seen);
    const tools = (request.body as { tools?: Array<{ name?: string }> }).tools ?? [];
    if (tools.length === 1 && tools[0]!.name === 'verify_replay') return toolUse('verify_replay', saved ? { matches: true, reason: 'The note is saved.', output: { saved: saved[1] } } : { matches: false, reason: 'No note was saved.' });
    if (saved) return finish('completed', { saved: saved[1] });
    if (seen.includes('"Note" [')) {
      return turn(memberBlock('form_input', { target: ref(seen, 'textbox', 'Note'), value: '{{note}}' }), memberBlock('left_click', { target: ref(seen, 'button', 'Save note') }), memberBlock('get_page_text'));
    }
    if (seen.includes('"user" [')) {
      return turn(
        memberBlock('form_input', { target: ref(seen, 'textbox', 'user'), value: '{{user}}' }),
        memberBlock('form_input', { target: ref(seen, 'textbox', 'password'), value: '{{password}}' }),
        memberBlock('form_input', { target: ref(seen, 'textbox', 'code'), value: '{{mfa}}' }),
        memberBlock('left_click', { target: ref(seen, 'button', 'Sign in') }),
        memberBlock('read_page', { filter: 'interactive' }),
      );
    }
    if (seen.includes('Sign out')) return turn(memberBlock('navigate', { url: `${site.origin}/notes` }), memberBlock('read_page', { filter: 'interactive' }));
    return finish('failed', undefined, `lost on the page: ${seen.slice(0, 300)}`);
  };
}

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  events: Array<Record<string, unknown>>;
}

async function run(versionId: string, note: string): Promise<Run> {
  const model = await startScriptedModelServer(notesAgent());
  try {
    const deps = createRunnerDeps({
      config: { ...config, ANTHROPIC_BASE_URL: model.url, PROFILE_KEYS: ring },
      logger,
      browser,
      store: createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' }),
      runCache: cache,
      profileStore: createLocalProfileStore({ dir: path.join(dir, 'profiles'), prefix: '' }),
    });
    const inputPayload = { user: TOTP_USER, password: SIGN_IN_PASSWORD, mfa: TOTP_SEED, note };
    const summary = await runExecution(deps, { executionId: randomUUID(), workflowId: 'wf-notes', workflowVersionId: versionId, inputPayload, specification: WORKFLOW(site.origin) }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const logs = await readFile(fileURLToPath(summary.urls.logsUrl!), 'utf8');
    return { summary, requests: model.requests, events: logs.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>) };
  } finally {
    await model.stop();
  }
}

describe('a cached run recorded with a sign-in, replayed with a profile', () => {
  it('starts the replay at the first step past the sign-in: no sign-in request, the new input saved, one model request (the final check)', async () => {
    const first = await run('v-notes', 'call-back-Monday');
    expect(first.summary.document).toMatchObject({ status: 'completed', output: { saved: 'call-back-Monday' }, cache: { used: false } });
    expect(first.summary.document.profile).toMatchObject({ id: 'tenant-a.notes', loaded: false, saved: true });
    expect(site.logins.at(-1)).toEqual({ user: TOTP_USER, accepted: true });
    expect(first.events.some((e) => e.type === 'run_cache_saved')).toBe(true);
    // Sign-in, open the notes, save the note: three steps, the first on the sign-in page.
    expect(first.summary.document.counters.nSteps).toBeGreaterThanOrEqual(3);

    const hits = site.app.hits.length;
    const logins = site.logins.length;
    const second = await run('v-notes', 'ship-on-Friday');
    expect(second.requests).toHaveLength(1);
    expect(site.logins.length).toBe(logins);
    expect(site.app.hits.slice(hits).filter((h) => h.url.startsWith('/login'))).toEqual([]);
    expect(site.notes.at(-1)).toBe('ship-on-Friday');
    expect(second.summary.document.profile).toMatchObject({ id: 'tenant-a.notes', loaded: true, saved: true, stale: false });
    expect(second.summary.document).toMatchObject({
      status: 'completed',
      output: { saved: 'ship-on-Friday' },
      cache: { used: true, replayedSteps: 2, modelSteps: 0, fallbackAtStep: null, reason: expect.stringContaining('the replay started at step 2'), finalCheck: { ran: true, matches: true } },
    });
    expect(second.events.find((e) => e.type === 'replay_started_later')).toMatchObject({ cachedStep: 2, skipped: 1 });
    // The sign-in's actions were passed over, not replayed (reads are not kept in a cache): no secret was entered.
    const byCache = second.events.filter((e) => e.type === 'action' && e.by === 'cache');
    expect(byCache.map((e) => e.action)).toEqual(['navigate', 'form_input', 'left_click']);
    expect(second.events.filter((e) => e.type === 'action' && e.by !== 'cache')).toEqual([]);
  });
});
