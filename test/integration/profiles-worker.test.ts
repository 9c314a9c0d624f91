import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openProfile, parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { tempDir } from '../support/env.js';
import { TOTP_SEED, TOTP_USER } from '../support/files-site.js';
import { waitForJob } from '../support/queue-events.js';
import { startRecordingApi, type RecordingApi } from '../support/recording-api.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { s3Credentials, startS3, type TestS3 } from '../support/s3.js';
import type { ScriptedModelServer } from '../support/scripted-model-server.js';
import { SIGN_IN_PASSWORD, signInAgent, startSignInSite, STORED_TOKEN, type SignInSite } from '../support/sign-in-site.js';
import { startTestWorker, uniqueName } from '../support/stack.js';

/**
 * Browser profiles through the daemon: jobs on a BullMQ queue in real Redis, the API's calls
 * recorded, profiles and artifacts in S3 over HTTP (s3rver), real Chromium on the sign-in site.
 */

const KEY = `k1:${randomBytes(32).toString('base64')}`;
const SCHEMA = {
  type: 'object',
  properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true }, mfa: { type: 'string', format: 'totp', 'x-secret': true } },
};

let redis: TestRedis;
let s3: TestS3;
let site: SignInSite;
let api: RecordingApi;
let workDir: string;

beforeAll(async () => {
  [redis, s3, site, api, workDir] = await Promise.all([startRedis(), startS3(), startSignInSite(), startRecordingApi(), tempDir('profiles-worker')]);
  process.env.AWS_ACCESS_KEY_ID = s3Credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = s3Credentials.secretAccessKey;
});

afterAll(async () => {
  await Promise.allSettled([redis?.stop(), s3?.stop(), site?.close(), api?.close()]);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

async function withWorker(env: Record<string, string>, body: (run: (profile: string) => Promise<{ id: string; result: unknown }>, model: ScriptedModelServer) => Promise<void>): Promise<string> {
  const worker = await startTestWorker({
    redisUrl: redis.url,
    queueName: uniqueName('profiles'),
    apiUrl: api.url,
    key: 'service-key-profiles',
    model: signInAgent(),
    logLevel: 'debug',
    env: {
      WORKER_CONCURRENCY: '1',
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_MAX_RETRIES: '0',
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      S3_PREFIX: 'prod',
      BROWSER_HOST_RULES: site.hostRules,
      WORK_DIR: workDir,
      VIDEO_ENABLED: 'false',
      ...env,
    },
  });
  const { queue } = worker;
  try {
    await body(async (profile) => {
      const id = randomUUID();
      const specification = { prompt: 'Open the account page, signing in when asked', allowedDomains: ['app.test'], startUrl: `${site.origin}/account`, payloadSchema: SCHEMA, profile };
      const finished = waitForJob(queue, id, redis.url);
      await queue.add('execute', { executionId: id, inputPayload: { user: TOTP_USER, password: SIGN_IN_PASSWORD, mfa: TOTP_SEED }, specification }, { jobId: id });
      return { id, result: await finished };
    }, worker.model);
  } finally {
    await worker.stop();
  }
  return worker.log.text();
}

const callsOf = (id: string) => api.calls.filter((c) => c.path.includes(id));

describe('profiles in the daemon', () => {
  it('keeps a sign-in between two executions of the queue, encrypted in the bucket', async () => {
    const log = await withWorker({ PROFILE_KEYS: KEY }, async (run) => {
      const first = await run('tenant-a.crm');
      expect(callsOf(first.id).map((c) => c.path.split('/').pop())).toEqual(['started', 'completed']);
      const logins = site.logins.length;
      const hits = site.app.hits.length;
      const second = await run('tenant-a.crm');
      expect(callsOf(second.id).map((c) => c.path.split('/').pop())).toEqual(['started', 'completed']);
      expect(site.logins.length).toBe(logins);
      expect(site.app.hits.slice(hits).filter((h) => h.url.startsWith('/login'))).toEqual([]);
      const steps = (r: { id: string }) => (callsOf(r.id).find((c) => c.path.endsWith('/completed'))!.body as { nSteps: number }).nSteps;
      expect(steps(second)).toBeLessThan(steps(first));
    });
    const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3Credentials });
    try {
      const res = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'prod/profiles/tenant-a.crm' }));
      const blob = Buffer.from(await res.Body!.transformToByteArray());
      expect(openProfile('tenant-a.crm', blob, parseProfileKeys(KEY))).toMatchObject({ ok: true });
      expect(blob.toString('latin1')).not.toContain(STORED_TOKEN);
    } finally {
      client.destroy();
    }
    // The worker's own process log (at debug level) holds no value of the profile.
    for (const value of [...site.sessions, STORED_TOKEN, SIGN_IN_PASSWORD]) expect(log).not.toContain(value);
    expect(log).toContain('execution completed');
  });

  it('refuses a profile without PROFILE_KEYS: failed with invalid_specification, and no started call', async () => {
    await withWorker({}, async (run) => {
      const refused = await run('tenant-a.crm');
      const calls = callsOf(refused.id);
      expect(calls.map((c) => c.path.split('/').pop())).toEqual(['failed']);
      expect(calls[0]!.body).toMatchObject({ error: { code: 'invalid_specification', message: expect.stringContaining('PROFILE_KEYS') } });
    });
  });
});
