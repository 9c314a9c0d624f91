import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyCreated, apiKeyList, loginLink, sessionInfo, type ApiKeyView } from '../../src/contract/access.js';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution } from '../../src/contract/executions.js';
import { openApiDocument } from '../../src/contract/openapi-document.js';
import { workflow } from '../../src/contract/workflows.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { createLogLines } from '../support/log-lines.js';
import { API_KEY, ISO, expectDetailShape, silentLogger, startHarness, type Harness } from './local-api-harness.js';

/**
 * API keys as the service describes them ("created by the user in the dashboard under Settings,
 * then API Keys"): named, shown once, kept as a hash, listed with their creation and last use,
 * revocable; the keys of API_KEYS listed as the bootstrap. Real HTTP, real Redis.
 */

let h: Harness;
let redis: Redis;

beforeAll(async () => {
  h = await startHarness({ network: true });
  redis = new Redis(h.redis.url);
});

afterAll(async () => {
  redis?.disconnect();
  await h?.close();
});

const withKey = (key: string) => ({ 'X-Service-Key': key });
const list = async (headers: Record<string, string> = withKey(API_KEY)): Promise<ApiKeyView[]> => {
  const res = await h.api.as(apiKeyList)('GET', '/api/keys', undefined, headers);
  expect(res.status).toBe(200);
  return res.body.keys;
};

/** Every string Redis holds: keys, hash fields and values, list and set members, string values. */
async function everythingInRedis(): Promise<string> {
  const parts: string[] = [];
  for (const key of await redis.keys('*')) {
    parts.push(key);
    const type = await redis.type(key);
    if (type === 'string') parts.push((await redis.get(key)) ?? '');
    if (type === 'hash') parts.push(...Object.entries(await redis.hgetall(key)).flat());
    if (type === 'set') parts.push(...(await redis.smembers(key)));
    if (type === 'zset') parts.push(...(await redis.zrange(key, '0', '-1')));
    if (type === 'list') parts.push(...(await redis.lrange(key, '0', '-1')));
    if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
  }
  return parts.join('\n');
}

describe('Settings → API Keys', () => {
  it('lists the keys of API_KEYS as bootstrap keys, by position, not revocable, without the keys', async () => {
    const keys = await list();
    // The harness's API_KEYS are `other-key` (unused so far) then API_KEY (this very request).
    expect(keys.filter((k) => k.source === 'bootstrap')).toEqual([
      { id: 'bootstrap-1', name: 'bootstrap-1', source: 'bootstrap', roles: ['operator', 'worker'], created_by: null, created_at: null, last_used_at: null, revocable: false, current: false },
      { id: 'bootstrap-2', name: 'bootstrap-2', source: 'bootstrap', roles: ['operator', 'worker'], created_by: null, created_at: null, last_used_at: expect.stringMatching(ISO), revocable: false, current: true },
    ]);
    expect(JSON.stringify(keys)).not.toContain(API_KEY);
    expect((await h.api('DELETE', '/api/keys/bootstrap-1')).status).toBe(409);
    expect((await h.api('GET', '/api/workflows', undefined, withKey('other-key'))).status).toBe(200);
  });

  it('makes a named key shown once, keeps only its SHA-256, and signs its requests in under its name', async () => {
    const made = await h.api.as(apiKeyCreated)('POST', '/api/keys', { name: 'ci runner' });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'ci runner', source: 'dashboard', roles: ['operator'], created_by: 'bootstrap-2', created_at: expect.stringMatching(ISO), last_used_at: null, revocable: true, current: false, key: expect.stringMatching(/^ewk_[A-Za-z0-9_-]{43}$/) });
    const key = made.body.key;

    const listed = (await list()).find((k) => k.id === made.body.id);
    expect(listed).toEqual({ id: made.body.id, name: 'ci runner', source: 'dashboard', roles: ['operator'], created_by: 'bootstrap-2', created_at: made.body.created_at, last_used_at: null, revocable: true, current: false });
    expect(JSON.stringify(await list())).not.toContain(key);

    // Nothing in Redis holds the key, or its random part; its hash is there.
    const stored = await everythingInRedis();
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(4, 20));
    expect(stored).toContain(createHash('sha256').update(key).digest('hex'));

    expect((await h.api('GET', '/api/workflows', undefined, withKey(key))).status).toBe(200);
    expect((await h.api.as(sessionInfo)('GET', '/api/session', undefined, withKey(key))).body).toEqual({ via: 'key', identity: 'ci runner' });
    const cookie = await h.signIn(key);
    expect((await h.api.as(sessionInfo)('GET', '/api/session', undefined, { Cookie: cookie })).body).toEqual({ via: 'session', identity: 'ci runner' });
    const afterUse = (await list(withKey(key))).find((k) => k.id === made.body.id)!;
    expect(afterUse.last_used_at).toMatch(ISO);
    expect(afterUse.current).toBe(true);
    // A key it makes works too.
    const second = await h.makeKey('made by ci', key);
    expect((await h.api('GET', '/api/executions', undefined, withKey(second.key))).status).toBe(200);
    // The list says what made it: the key's id.
    expect((await list()).find((k) => k.id === second.id)?.created_by).toBe(made.body.id);
  });

  it('revokes every key made with a revoked key, transitively, and the sessions they opened', async () => {
    const root = await h.makeKey('chain root');
    const child = await h.makeKey('chain child', root.key);
    const grandchild = await h.api.as(apiKeyCreated)('POST', '/api/keys', { name: 'chain grandchild', role: 'worker' }, withKey(child.key));
    expect(grandchild.status).toBe(201);
    expect(grandchild.body.created_by).toBe(child.id);
    const beside = await h.makeKey('beside the chain');
    const childSession = await h.signIn(child.key);
    expect((await h.api('GET', '/api/workflows', undefined, withKey(child.key))).status).toBe(200);

    expect((await h.api('DELETE', `/api/keys/${root.id}`)).status).toBe(204);
    for (const key of [root.key, child.key, grandchild.body.key]) {
      expect((await h.api('GET', '/api/executions/x1', undefined, withKey(key))).status).toBe(401);
    }
    expect((await h.api('GET', '/api/workflows', undefined, { Cookie: childSession })).status).toBe(401);
    const listed = (await list()).map((k) => k.id);
    expect(listed).not.toEqual(expect.arrayContaining([root.id]));
    for (const id of [root.id, child.id, grandchild.body.id]) expect(listed).not.toContain(id);
    // A key beside the chain is untouched.
    expect(listed).toContain(beside.id);
    expect((await h.api('GET', '/api/workflows', undefined, withKey(beside.key))).status).toBe(200);
  });

  it("makes a key with the role asked for: a worker's key posts the worker's reports and reads what the worker reads, nothing else; an operator's key never posts a report", async () => {
    const worker = await h.api.as(apiKeyCreated)('POST', '/api/keys', { name: 'reports only', role: 'worker' });
    expect(worker.status).toBe(201);
    expect(worker.body).toMatchObject({ roles: ['worker'], created_by: 'bootstrap-2' });
    const operator = await h.makeKey('an integration');
    expect((await list()).find((k) => k.id === operator.id)?.roles).toEqual(['operator']);
    const workerKey = withKey(worker.body.key);

    const created = await h.api.as(workflow)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'] });
    expect(created.status).toBe(201);
    const workflowId = created.body.workflow_uuid;
    const executed = await h.api.as(execution)('POST', `/api/workflows/${workflowId}/execute`, {});
    expect(executed.status).toBe(201);
    const executionId = executed.body.execution_uuid;

    // The integration's key (an operator's) cannot move the execution, ask a question or complete it.
    const at = new Date().toISOString();
    for (const [report, body] of [['started', { startedAt: at }], ['waiting', { waitingAt: at, kind: 'question', question: 'Your password?' }], ['completed', { completedAt: at, durationMs: 1, nSteps: 0, nAgentActions: 0, nScreenshots: 0, output_url: 'https://evil.test/' }]] as const) {
      const refused = await h.api.as(errorBody)('POST', `/api/executions/${executionId}/${report}`, body, withKey(operator.key));
      expect(refused.status, report).toBe(403);
      expect(refused.body.detail?.[0]).toMatchObject({ loc: ['header', 'X-Service-Key'], type: 'forbidden' });
    }
    expect((await h.api.as(execution)('GET', `/api/executions/${executionId}`)).body.status).toBe('queued');

    // The worker's key does the worker's part.
    expect((await h.api('GET', `/api/executions/${executionId}`, undefined, workerKey)).status).toBe(200);
    expect((await h.api('GET', `/api/workflows/${workflowId}/versions`, undefined, workerKey)).status).toBe(200);
    expect((await h.api('POST', `/api/executions/${executionId}/started`, { startedAt: at }, workerKey)).status).toBe(200);
    // And nothing else: the API, signing in, making a key, the key list.
    for (const [method, url, body] of [['GET', '/api/workflows', undefined], ['GET', '/api/executions', undefined], ['POST', '/api/session', undefined], ['POST', '/api/keys', { name: 'escalated' }], ['GET', '/api/keys', undefined], ['POST', `/api/workflows/${workflowId}/execute`, {}]] as const) {
      expect((await h.api(method, url, body, workerKey)).status, `${method} ${url}`).toBe(403);
    }
    expect((await h.api('POST', '/api/keys', { name: 'bad role', role: 'admin' })).status).toBe(422);
  });

  it('refuses a revoked key at once, with every session and login link it made, on every process sharing the Redis', async () => {
    const { id, key } = await h.makeKey('to revoke');
    const cookie = await h.signIn(key);
    const link = (await h.api.as(loginLink)('POST', '/api/login-links', { route: '#/executions' }, withKey(key))).body.url;
    const other: LocalServer = await startLocalServer({ port: 0, apiKeys: ['other-key', API_KEY], redisUrl: h.redis.url, queueName: h.queueName, queuePrefix: 'bull', keyPrefix: h.keyPrefix, logger: silentLogger });
    try {
      expect((await fetch(`${other.url}/api/workflows`, { headers: withKey(key) })).status).toBe(200);

      expect((await h.api('DELETE', `/api/keys/${id}`)).status).toBe(204);
      for (const url of [h.server.url, other.url]) {
        const refused = await fetch(`${url}/api/workflows`, { headers: withKey(key) });
        expect(refused.status).toBe(401);
        expect(await refused.json()).toEqual({ detail: [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }] });
      }
      expect((await h.api('GET', '/api/workflows', undefined, { Cookie: cookie })).status).toBe(401);
      // A revoked key with a live session of another key rides along: the key decides.
      const live = await h.signIn();
      expect((await h.api('GET', '/api/workflows', undefined, { Cookie: live, ...withKey(key) })).status).toBe(401);
      const opened = await fetch(link, { redirect: 'manual' });
      expect(opened.status).toBe(401);
      expect(opened.headers.get('set-cookie')).toBeNull();
      expect((await list()).some((k) => k.id === id)).toBe(false);
      expect((await h.api('DELETE', `/api/keys/${id}`)).status).toBe(404);
    } finally {
      await other.close();
    }
  });

  it('lets a session list, revoke and make keys: a key a session makes is the signing key\'s, and goes when that key is revoked', async () => {
    const cookie = await h.signIn();
    const session = { Cookie: cookie, Origin: h.server.url };
    expect((await list({ Cookie: cookie })).map((k) => k.name)).toContain('bootstrap-1');
    // Not from another origin: the cookie rides along with any page's request.
    const crossOrigin = await h.api('POST', '/api/keys', { name: 'from elsewhere' }, { Cookie: cookie, Origin: 'https://evil.test' });
    expect(crossOrigin.status).toBe(403);
    expect((await list()).some((k) => k.name === 'from elsewhere')).toBe(false);
    const { id } = await h.makeKey('revoked by a session');
    expect((await h.api('DELETE', `/api/keys/${id}`, undefined, { Cookie: cookie })).status).toBe(403);
    expect((await h.api('DELETE', `/api/keys/${id}`, undefined, session)).status).toBe(204);

    // A session signed in with a dashboard key makes a key recorded as that key's.
    const signer = await h.makeKey('signs a browser in');
    const signed = { Cookie: await h.signIn(signer.key), Origin: h.server.url };
    const made = await h.api.as(apiKeyCreated)('POST', '/api/keys', { name: 'made in the dashboard', role: 'worker' }, signed);
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ roles: ['worker'], created_by: signer.id });
    expect((await list()).find((k) => k.id === made.body.id)?.created_by).toBe(signer.id);
    const executed = await h.api('GET', '/api/executions/x1', undefined, withKey(made.body.key));
    expect(executed.status).toBe(404);
    // Revoking the key that signed the session in revokes what the session made.
    expect((await h.api('DELETE', `/api/keys/${signer.id}`)).status).toBe(204);
    expect((await h.api('GET', '/api/executions/x1', undefined, withKey(made.body.key))).status).toBe(401);
    expect((await list()).some((k) => k.id === made.body.id)).toBe(false);
    expect((await h.api('POST', '/api/keys', { name: 'after the revocation' }, signed)).status).toBe(401);
  });

  it('keeps names unique whatever their case, reserves the bootstrap names and refuses odd ones', async () => {
    await h.makeKey('Deploy Bot');
    const again = await h.api.as(errorBody)('POST', '/api/keys', { name: 'deploy bot' });
    expect(again.status).toBe(409);
    expect(again.body.detail?.[0]).toMatchObject({ loc: ['body', 'name'], type: 'conflict' });
    for (const body of [{ name: 'bootstrap-3' }, { name: 'Bootstrap-1' }, { name: '' }, { name: ' leading space' }, { name: 'bootstrap-1 ' }, { name: 'trailing ' }, { name: 'two  spaces' }, { name: 'x'.repeat(65) }, { name: 'new\nline' }, { name: 'ok', extra: 1 }, {}]) {
      const res = await h.api.as(errorBody)('POST', '/api/keys', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expectDetailShape(res.body);
    }
    // Two at once with one name: exactly one is made.
    const both = await Promise.all([h.api('POST', '/api/keys', { name: 'racer' }), h.api('POST', '/api/keys', { name: 'RACER' })]);
    expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
  });

  it('documents the key routes in the OpenAPI document', async () => {
    const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
    expect(doc.paths['/api/keys']?.post?.requestBody?.content['application/json']?.schema).toEqual({ $ref: '#/components/schemas/ApiKeyCreate' });
    expect(Object.keys(doc.paths['/api/keys'] ?? {})).toEqual(expect.arrayContaining(['get', 'post']));
    expect(Object.keys(doc.paths['/api/keys/{keyId}'] ?? {})).toEqual(['delete']);
    expect(doc.components.schemas.ApiKey?.required).toEqual(expect.arrayContaining(['name', 'roles', 'created_by', 'created_at', 'last_used_at']));
    expect(doc.components.schemas.ApiKeyCreate?.properties?.role).toMatchObject({ enum: ['operator', 'worker'] });
  });
});

describe('identity in the log', () => {
  it('records the name of the key each request comes from, and never a key', async () => {
    const log = createLogLines();
    const logger = createLogger({ level: 'debug', destination: log as unknown as NodeJS.WritableStream, secrets: ['other-key', API_KEY] });
    const server = await startLocalServer({ port: 0, apiKeys: ['other-key', API_KEY], redisUrl: h.redis.url, queueName: h.queueName, queuePrefix: 'bull', keyPrefix: h.keyPrefix, logger });
    try {
      const made = await fetch(`${server.url}/api/keys`, { method: 'POST', headers: { ...withKey(API_KEY), 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'logged' }) });
      const { key, id } = (await made.json()) as { key: string; id: string };
      await fetch(`${server.url}/api/workflows`, { headers: withKey(key) });
      await fetch(`${server.url}/api/keys/${id}`, { method: 'DELETE', headers: withKey('other-key') });
      const requests = log.lines.filter((l) => l.msg === 'request');
      expect(requests.map((l) => [l.method, l.path, l.by])).toEqual([
        ['POST', '/api/keys', 'bootstrap-2'],
        ['GET', '/api/workflows', 'logged'],
        ['DELETE', `/api/keys/${id}`, 'bootstrap-1'],
      ]);
      expect(log.lines.find((l) => l.msg === 'API key made')).toMatchObject({ key: 'logged', by: 'bootstrap-2' });
      expect(log.lines.find((l) => l.msg === 'API key revoked')).toMatchObject({ key: 'logged', by: 'bootstrap-1' });
      expect(JSON.stringify(log.lines)).not.toContain(key);
    } finally {
      await server.close();
    }
  });
});
