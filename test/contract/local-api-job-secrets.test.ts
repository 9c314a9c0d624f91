import { randomBytes } from 'node:crypto';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution } from '../../src/contract/executions.js';
import { versionList, workflow } from '../../src/contract/workflows.js';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { startHarness, type Harness } from './local-api-harness.js';

/** Deleting a workflow takes its executions' secrets out of Redis: their jobs, ended or waiting, on a real Redis. */

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('DELETE /api/workflows/{id} and the queued jobs', () => {
  it('removes the jobs of the workflow, ended and waiting, so no secret stays in Redis', async () => {
    const created = await h.api.as(workflow)('POST', '/api/workflows', {
      name: 'Sign in',
      prompt: 'Sign in',
      allowedDomains: ['shop.test'],
      payloadSchema: { type: 'object', properties: { password: { type: 'string', writeOnly: true } } },
    });
    const workflowId = created.body.workflow_uuid;
    const execute = async () => (await h.api.as(execution)('POST', `/api/workflows/${workflowId}/execute`, { inputPayload: { password: 'queued-Pa55word' } })).body.execution_uuid;

    const ended = await execute();
    // A worker takes it and ends it: BullMQ keeps the completed job, real input included.
    const done = new Promise<void>((resolve) => {
      const worker = new Worker(h.queueName, async () => ({ status: 'completed' }), { connection: { url: h.redis.url }, prefix: 'bull', autorun: true });
      worker.on('completed', () => void worker.close().then(resolve));
    });
    await done;
    expect((await h.queue.getJob(ended))?.data.inputPayload).toEqual({ password: 'queued-Pa55word' });
    const waiting = await execute();
    expect(await h.queue.getJob(waiting)).toBeDefined();

    expect((await h.api('DELETE', `/api/workflows/${workflowId}`)).status).toBe(204);
    expect(await h.queue.getJob(ended)).toBeUndefined();
    expect(await h.queue.getJob(waiting)).toBeUndefined();
  });
});

/** Every key of the Redis, every value of every type, as text. */
async function scanRedis(url: string): Promise<Map<string, string>> {
  const redis = new Redis(url);
  const out = new Map<string, string>();
  try {
    for (const key of await redis.keys('*')) {
      const type = await redis.type(key);
      const value =
        type === 'string' ? await redis.get(key)
        : type === 'hash' ? JSON.stringify(await redis.hgetall(key))
        : type === 'zset' ? JSON.stringify(await redis.zrange(key, '0', '-1'))
        : type === 'set' ? JSON.stringify(await redis.smembers(key))
        : type === 'list' ? JSON.stringify(await redis.lrange(key, '0', '-1'))
        : type === 'stream' ? JSON.stringify(await redis.xrange(key, '-', '+'))
        : `(${type})`;
      out.set(key, value ?? '');
    }
  } finally {
    redis.disconnect();
  }
  return out;
}

describe('a version’s default input at rest (docs/secrets.md#at-rest)', () => {
  const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
  const PASSWORD = 'default-Pa55  word-7f2c';
  const signIn = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true } } };
  const plain = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string' } } };
  let k: Harness;
  beforeAll(async () => {
    k = await startHarness({ inputKeys: keys });
  });
  afterAll(async () => {
    await k?.close();
  });

  it('is masked under every schema its versions had, kept across edits, and no Redis key or value holds the secret in any form', async () => {
    const created = await k.api.as(workflow)('POST', '/api/workflows', { name: 'Default', prompt: 'Sign in', allowedDomains: ['shop.test'], payloadSchema: signIn, configuration: { inputPayload: { user: 'ann', password: PASSWORD } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.workflow_uuid;
    expect(created.body.current_version?.configuration.inputPayload).toEqual({ user: 'ann', password: '{{password}}' });
    expect(JSON.stringify(created.body)).not.toContain('input_secrets');
    // An edit whose schema no longer marks the password: the default input it keeps still hides it.
    const edited = await k.api.as(workflow)('PATCH', `/api/workflows/${id}`, { payloadSchema: plain });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body.current_version?.configuration.inputPayload).toEqual({ user: 'ann', password: '{{password}}' });
    // An edit that sends the configuration back as shown, with another user: the password stays.
    const again = await k.api('PATCH', `/api/workflows/${id}`, { configuration: { inputPayload: { user: 'bob', password: '{{password}}' } } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const versions = await k.api.as(versionList)('GET', `/api/workflows/${id}/versions`);
    expect(versions.body.items.map((v) => v.configuration.inputPayload)).toEqual([
      { user: 'ann', password: '{{password}}' },
      { user: 'ann', password: '{{password}}' },
      { user: 'bob', password: '{{password}}' },
    ]);

    const vault = createSecretVault({ password: PASSWORD }, signIn);
    for (const [key, value] of await scanRedis(k.redis.url)) expect(vault.redact(`${key} ${value}`), key).toBe(`${key} ${value}`);

    // Run with the default input: the job carries the real value for the worker to type; the
    // execution as stored and answered does not.
    const executed = await k.api.as(execution)('POST', `/api/workflows/${id}/execute`, {});
    expect(executed.status, JSON.stringify(executed.body)).toBe(201);
    expect(executed.body.input_payload).toEqual({ user: 'bob', password: '{{password}}' });
    const job = await k.queue.getJob(executed.body.execution_uuid);
    expect(job?.data.inputPayload).toEqual({ user: 'bob', password: PASSWORD });
    // The job's specification marks it, so the worker keeps it from the model and the logs.
    expect(createSecretVault(job?.data.inputPayload, job?.data.specification.payloadSchema).paths).toEqual(['password']);
  });

  it('is refused with a reason when it holds a secret and the API has no PROFILE_KEYS; without secrets it is kept', async () => {
    const refused = await h.api.as(errorBody)('POST', '/api/workflows', { name: 'No keys', prompt: 'Sign in', allowedDomains: ['shop.test'], payloadSchema: signIn, configuration: { inputPayload: { user: 'ann', password: PASSWORD } } });
    expect(refused.status).toBe(422);
    expect(refused.body.detail?.[0]).toMatchObject({ loc: ['body', 'configuration', 'inputPayload'], type: 'secret_needs_keys' });
    expect(refused.body.detail?.[0]?.msg).toMatch(/\(password\).*PROFILE_KEYS/);
    expect(JSON.stringify(refused.body)).not.toContain(PASSWORD);
    const kept = await h.api.as(workflow)('POST', '/api/workflows', { name: 'No secrets', prompt: 'Go', allowedDomains: ['shop.test'], payloadSchema: signIn, configuration: { inputPayload: { user: 'ann' } } });
    expect(kept.status).toBe(201);
    expect(kept.body.current_version?.configuration.inputPayload).toEqual({ user: 'ann' });
  });
});
