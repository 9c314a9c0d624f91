import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserSandbox } from '../../src/browser/types.js';
import type { StorageState } from '../../src/contract/storage-state.js';
import { createBrowser, createRunnerDeps } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import { openProfile, parseProfileKeys, readProfileHeader, type ProfileKeyring } from '../../src/domain/profile-crypto.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createS3ProfileStore, type S3ProfileStore } from '../../src/storage/profile-store.js';
import { createLogger, createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';
import { TOTP_SEED, TOTP_USER } from '../support/files-site.js';
import { s3Credentials, startS3, type TestS3 } from '../support/s3.js';
import { startScriptedModelServer, type RecordedRequest } from '../support/scripted-model-server.js';
import { EVIL_COOKIE, SIGN_IN_PASSWORD, signInAgent, startSignInSite, STORED_TOKEN, type SignInSite } from '../support/sign-in-site.js';

/**
 * Browser profiles through the whole runner (docs/profiles.md), on real Chromium, profiles in
 * S3 over HTTP (s3rver), the real SDK against a scripted model that signs in (user, password,
 * TOTP) only when the page it is shown asks for it, as an agent would.
 */

const SCHEMA = {
  type: 'object',
  required: ['user', 'password', 'mfa'],
  properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true }, mfa: { type: 'string', format: 'totp', 'x-secret': true } },
};
const INPUT = { user: TOTP_USER, password: SIGN_IN_PASSWORD, mfa: TOTP_SEED };

let site: SignInSite;
let s3: TestS3;
let dir: string;
let config: Config;
let browser: BrowserSandbox;
let profiles: S3ProfileStore;
const ring = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
/** Everything the worker's own process log wrote, across runs. */
let processLog = '';

beforeAll(async () => {
  [site, s3, dir] = await Promise.all([startSignInSite(), startS3('profiles'), tempDir('profiles')]);
  config = loadConfig({ BROWSER_HOST_RULES: site.hostRules, WORK_DIR: path.join(dir, 'work'), ANTHROPIC_API_KEY: 'k', ANTHROPIC_MAX_RETRIES: '0', VIDEO_ENABLED: 'false' });
  browser = createBrowser(config, createSilentLogger());
  profiles = createS3ProfileStore({ bucket: 'profiles', prefix: 'tenant-a/', endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, maxAttempts: 2, credentials: s3Credentials });
});

afterAll(async () => {
  profiles?.close();
  await browser?.close();
  await Promise.all([site?.close(), s3?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  events: Array<Record<string, unknown>>;
  /** logs.jsonl, output.json and recording.json as written. */
  written: string;
}

async function run(profile: string | undefined, options: { keys?: ProfileKeyring | null; end?: 'completed' | 'failed'; allowedDomains?: string[]; startUrl?: string } = {}): Promise<Run> {
  const model = await startScriptedModelServer(signInAgent(options.end));
  try {
    const logStream = new PassThrough();
    logStream.on('data', (chunk: Buffer) => (processLog += chunk.toString('utf8')));
    const logger = createLogger({ level: 'trace', destination: logStream });
    const keys = options.keys === null ? undefined : (options.keys ?? ring);
    const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url, PROFILE_KEYS: keys }, logger, browser, store: createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' }), profileStore: profiles });
    const specification = {
      prompt: 'Open the account page, signing in when asked',
      allowedDomains: options.allowedDomains ?? ['app.test'],
      startUrl: options.startUrl ?? `${site.origin}/account`,
      payloadSchema: SCHEMA,
      ...(profile ? { profile } : {}),
    };
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload: INPUT, specification }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const folder = path.dirname(fileURLToPath(summary.urls.logsUrl!));
    const read = (name: string) => (existsSync(path.join(folder, name)) ? readFileSync(path.join(folder, name), 'utf8') : '');
    const logs = read('logs.jsonl');
    return {
      summary,
      requests: model.requests,
      events: logs.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>),
      written: [logs, read('output.json'), read('recording.json')].join('\n'),
    };
  } finally {
    await model.stop();
  }
}

async function saved(id: string, keys = ring): Promise<StorageState> {
  const blob = await profiles.read(id);
  if (!blob) throw new Error(`no profile ${id}`);
  const opened = openProfile(id, blob, keys);
  if (!opened.ok) throw new Error(opened.reason);
  return opened.state as StorageState;
}

const typedCode = (r: Run) => r.events.some((e) => e.type === 'action' && (e.input as { text?: string }).text === '{{mfa}}');
const signInHits = (from: number) => site.app.hits.slice(from).filter((h) => h.url.startsWith('/login'));
const tokens = (r: Run) => r.summary.document.usage.inputTokens + r.summary.document.usage.outputTokens;

describe('a workflow that signs in, run twice with one profile', () => {
  it('signs in on the first run only: the second makes no sign-in request, types no code, takes fewer steps and tokens', async () => {
    const first = await run('tenant-a.crm');
    expect(first.summary.document.status).toBe('completed');
    expect(site.logins.at(-1)).toEqual({ user: TOTP_USER, accepted: true });
    expect(typedCode(first)).toBe(true);
    expect(first.summary.document.profile).toMatchObject({ id: 'tenant-a.crm', loaded: false, saved: true, stale: false });
    const state = await saved('tenant-a.crm');
    expect(state.cookies.map((c) => c.name).sort()).toEqual(['layout', 'sid']);
    expect(state.origins).toEqual([{ origin: 'http://app.test', localStorage: [{ name: 'token', value: STORED_TOKEN }] }]);
    expect(first.summary.document.profile).toMatchObject({ cookies: 2, origins: 1 });

    const hitsBefore = site.app.hits.length;
    const loginsBefore = site.logins.length;
    const second = await run('tenant-a.crm');
    expect(second.summary.document.status).toBe('completed');
    expect(signInHits(hitsBefore)).toEqual([]);
    expect(site.logins.length).toBe(loginsBefore);
    expect(typedCode(second)).toBe(false);
    // The page found the token the profile's localStorage brought.
    expect(second.requests[0]!.rawBody).toContain('Stored token found');
    expect(first.requests[0]!.rawBody).not.toContain('Stored token found');
    expect(second.summary.document.profile).toMatchObject({ id: 'tenant-a.crm', loaded: true, saved: true, cookies: 2, origins: 1, stale: false });
    const [a, b] = [first.summary.document.counters, second.summary.document.counters];
    expect(b.nSteps).toBeLessThan(a.nSteps);
    expect(b.nAgentActions).toBeLessThan(a.nAgentActions);
    expect(tokens(second)).toBeLessThan(tokens(first));
    // The figures, for the record (docs/profiles.md quotes them).
    console.info(`profiles: first run ${a.nSteps} steps, ${a.nAgentActions} actions, ${tokens(first)} tokens; second run ${b.nSteps} steps, ${b.nAgentActions} actions, ${tokens(second)} tokens`);

    // No value of the profile anywhere: artifacts, the model's requests, the process log, the stored blob.
    const values = [...site.sessions, STORED_TOKEN, SIGN_IN_PASSWORD, TOTP_SEED];
    const everything = [first.written, second.written, ...[...first.requests, ...second.requests].map((q) => q.rawBody), processLog, (await profiles.read('tenant-a.crm'))!.toString('latin1')];
    for (const text of everything) for (const value of values) expect(text).not.toContain(value);
    expect(second.events.filter((e) => String(e.type).startsWith('profile_')).map((e) => e.type)).toEqual(['profile_loaded', 'profile_saved']);
  });

  it('goes on by signing in when the saved sign-in no longer works, and says the profile was stale', async () => {
    await run('tenant-a.stale');
    site.forgetSessions();
    const loginsBefore = site.logins.length;
    const again = await run('tenant-a.stale');
    expect(again.summary.document.status).toBe('completed');
    expect(site.logins.slice(loginsBefore)).toEqual([{ user: TOTP_USER, accepted: true }]);
    expect(again.summary.document.profile).toMatchObject({ loaded: true, saved: true, stale: true });
    expect(again.events.some((e) => e.type === 'profile_stale')).toBe(true);
  });
});

describe('profiles that cannot be used', () => {
  it('refuses a profile before started when the worker has no PROFILE_KEYS', async () => {
    const r = await run('tenant-a.nokeys', { keys: null });
    expect(r.summary.document.status).toBe('failed');
    expect(r.summary.document.error).toEqual({ code: 'invalid_specification', message: expect.stringMatching(/profile "tenant-a\.nokeys": this worker has no PROFILE_KEYS/) });
    expect(r.events.some((e) => e.type === 'execution_started')).toBe(false);
    expect(await profiles.read('tenant-a.nokeys')).toBeUndefined();
  });

  it('treats an altered blob as empty: the run signs in, completes and replaces it', async () => {
    await run('tenant-a.altered');
    const blob = (await profiles.read('tenant-a.altered'))!;
    blob[blob.length - 5]! ^= 0x20;
    await profiles.write('tenant-a.altered', blob);
    const loginsBefore = site.logins.length;
    const r = await run('tenant-a.altered');
    expect(r.summary.document.status).toBe('completed');
    expect(site.logins.length).toBe(loginsBefore + 1);
    expect(r.events.find((e) => e.type === 'profile_unreadable')).toMatchObject({ id: 'tenant-a.altered', reason: expect.stringMatching(/does not authenticate/) });
    expect(r.summary.document.profile).toMatchObject({ loaded: false, saved: true, stale: false });
    expect((await saved('tenant-a.altered')).cookies.length).toBe(2);
  });

  it('leaves the stored bytes unchanged when the run fails', async () => {
    await run('tenant-a.failing');
    site.forgetSessions();
    const before = (await profiles.read('tenant-a.failing'))!;
    // The failing run signs in again (new cookies in its browser), then fails.
    const r = await run('tenant-a.failing', { end: 'failed' });
    expect(r.summary.document.status).toBe('failed');
    expect(r.summary.document.profile).toMatchObject({ loaded: true, saved: false });
    expect((await profiles.read('tenant-a.failing'))!.equals(before)).toBe(true);
  });
});

describe('profiles under load and change', () => {
  it('ends two concurrent runs of one profile with one whole profile of one of them', async () => {
    const sessionsBefore = site.sessions.length;
    const [a, b] = await Promise.all([run('tenant-a.shared'), run('tenant-a.shared')]);
    expect([a.summary.document.status, b.summary.document.status]).toEqual(['completed', 'completed']);
    const state = await saved('tenant-a.shared');
    const sid = state.cookies.find((c) => c.name === 'sid')!.value;
    expect(site.sessions.slice(sessionsBefore)).toContain(sid);
    expect(state.cookies).toHaveLength(2);
    expect([a, b].some((r) => r.summary.document.profile?.saved)).toBe(true);
  });

  it('never keeps cookies of hosts outside the allow-list, set by a redirect or a third-party frame', async () => {
    // While evil.test was allowed, its frame and a redirect there set its cookies into the profile.
    await run('tenant-a.scoped', { allowedDomains: ['app.test', 'evil.test'] });
    await run('tenant-a.scoped', { allowedDomains: ['app.test', 'evil.test'], startUrl: `${site.origin}/go/evil` });
    const wide = await saved('tenant-a.scoped');
    expect(wide.cookies.filter((c) => c.domain === 'evil.test').map((c) => c.value)).toContain(EVIL_COOKIE);
    // Now the workflow allows app.test only: the account page still frames evil.test, the run is sent there by a redirect.
    const evilHits = site.evil.hits.length;
    await run('tenant-a.scoped');
    const r = await run('tenant-a.scoped', { startUrl: `${site.origin}/go/evil` });
    expect(r.events.some((e) => e.type === 'blocked' && String(e.url).startsWith('http://evil.test/'))).toBe(true);
    expect(site.evil.hits.length).toBe(evilHits);
    const narrow = await saved('tenant-a.scoped');
    expect(narrow.cookies.length).toBeGreaterThan(0);
    expect(narrow.cookies.filter((c) => !['app.test', '.app.test'].includes(c.domain))).toEqual([]);
    expect(narrow.origins.map((o) => o.origin)).toEqual(['http://app.test']);
    expect(JSON.stringify(narrow)).not.toContain(EVIL_COOKIE);
  });

  it('rotates keys: a profile of the old key loads while it is listed, and the next save uses the new key', async () => {
    const old = parseProfileKeys(`old:${randomBytes(32).toString('base64')}`);
    await run('tenant-a.rotate', { keys: old });
    expect(readProfileHeader((await profiles.read('tenant-a.rotate'))!)).toMatchObject({ ok: true, header: { kid: 'old' } });
    const fresh = randomBytes(32).toString('base64');
    const rotated = parseProfileKeys(`new:${fresh},old:${old.byId.get('old')!.toString('base64')}`);
    const r = await run('tenant-a.rotate', { keys: rotated });
    expect(r.summary.document.profile).toMatchObject({ loaded: true, saved: true });
    expect(readProfileHeader((await profiles.read('tenant-a.rotate'))!)).toMatchObject({ ok: true, header: { kid: 'new' } });
    // The old key retired: the profile still loads, without a sign-in.
    const loginsBefore = site.logins.length;
    const after = await run('tenant-a.rotate', { keys: parseProfileKeys(`new:${fresh}`) });
    expect(after.summary.document.profile).toMatchObject({ loaded: true, stale: false });
    expect(site.logins.length).toBe(loginsBefore);
  });
});

it('keeps the profile blobs under {S3_PREFIX}profiles/', async () => {
  const listed = await profiles.list();
  expect(listed.map((p) => p.id)).toContain('tenant-a.crm');
  expect(listed.every((p) => p.bytes > 0 && !Number.isNaN(Date.parse(p.updatedAt)))).toBe(true);
  expect(s3.requests.some((r) => r.startsWith('PUT /profiles/tenant-a/profiles/tenant-a.crm'))).toBe(true);
});
