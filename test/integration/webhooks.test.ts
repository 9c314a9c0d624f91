import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalServer, type LocalServer, type LocalServerOptions } from '../../src/local-service/server.js';
import { systemResolve } from '../../src/local-service/webhooks/targets.js';
import { createLogger, createSilentLogger } from '../../src/telemetry/logger.js';
import { createLogLines } from '../support/log-lines.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startWebhookReceiver, type HeardDelivery, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Webhooks on the local API (docs/api.md#webhooks), with real HTTP receivers that check each
 * signature with their own HMAC (test/support/webhook-receiver.ts): events as the reports move an
 * execution, retries of a receiver that fails, the same id on every attempt, past a restart of the
 * service, and refused targets that never see a connection. Retries wait 100 ms here
 * (WEBHOOK_RETRY_SCHEDULE_MS); nothing waits on time but the receivers' events.
 */

const KEY = 'webhooks-key';
let redis: TestRedis;
const connections: { address: string; port: number }[] = [];
/** Names the deliveries resolve, by test: `rebind.test` is loopback when made and metadata at delivery. */
const names = new Map<string, string[]>();
let opts: LocalServerOptions;
let api: LocalServer;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const queueName = `webhooks-${randomUUID().slice(0, 8)}`;
  opts = {
    port: 0, apiKeys: [KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', logger: createSilentLogger(), keyPrefix: `{api-${queueName}}:`,
    webhookRetryScheduleMs: Array.from({ length: 50 }, () => 100),
    webhookResolve: async (host) => names.get(host)?.splice(0, 1) ?? systemResolve(host),
    // Every socket a delivery opens, recorded before it is opened.
    webhookConnect: (to) => {
      connections.push({ address: to.address, port: to.port });
      return net.connect({ host: to.address, port: to.port });
    },
  };
  api = await startLocalServer(opts);
});

afterAll(async () => {
  await Promise.allSettled([api?.close(), ...receivers.map((r) => r.close())]);
  await redis?.stop();
});

async function call(method: string, route: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${api.url}${route}`, { method, headers: { 'x-service-key': KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function receiver(answer?: Parameters<typeof startWebhookReceiver>[1]): Promise<{ r: WebhookReceiver; secret: { value: string } }> {
  const secret = { value: '' };
  const r = await startWebhookReceiver(() => secret.value, answer);
  receivers.push(r);
  return { r, secret };
}

async function makeWebhook(url: string, events: string[], workflowId?: string): Promise<{ id: string; secret: string }> {
  const made = await call('POST', '/api/webhooks', { url, events, ...(workflowId ? { workflowId } : {}) });
  expect(made.status, JSON.stringify(made.json)).toBe(201);
  return { id: String(made.json.id), secret: String(made.json.secret) };
}

async function newExecution(): Promise<{ workflowId: string; executionId: string }> {
  const wf = await call('POST', '/api/workflows', { name: `wf ${randomUUID().slice(0, 6)}`, prompt: 'Read the page.', allowedDomains: ['example.com'] });
  expect(wf.status).toBe(201);
  const ex = await call('POST', `/api/workflows/${String(wf.json.workflow_uuid)}/execute`, {});
  expect(ex.status).toBe(201);
  return { workflowId: String(wf.json.workflow_uuid), executionId: String(ex.json.execution_uuid) };
}

const report = (executionId: string, what: string, body: Record<string, unknown>) => call('POST', `/api/executions/${executionId}/${what}`, body);
const finalCounters = { durationMs: 1200, nSteps: 2, nAgentActions: 3, nScreenshots: 1 };

describe('webhooks', () => {
  it('delivers started, waiting and completed, each signed, for its workflow only; a repeated report sends nothing again', async () => {
    const { r, secret } = await receiver();
    const { workflowId, executionId } = await newExecution();
    const other = await newExecution();
    const hook = await makeWebhook(r.url, ['execution.started', 'execution.waiting', 'execution.completed'], workflowId);
    secret.value = hook.secret;
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const listed = await call('GET', '/api/webhooks');
    expect(JSON.stringify(listed.json)).not.toContain(hook.secret);
    expect(listed.json.items).toContainEqual(expect.objectContaining({ id: hook.id, url: r.url, workflowId }));

    const startedAt = new Date().toISOString();
    expect((await report(executionId, 'started', { startedAt })).status).toBe(200);
    expect((await report(executionId, 'started', { startedAt })).status).toBe(200);
    expect((await report(other.executionId, 'started', { startedAt })).status).toBe(200);
    expect((await report(executionId, 'waiting', { waitingAt: new Date().toISOString(), kind: 'question', question: 'Which one?' })).status).toBe(200);
    expect((await report(executionId, 'resumed', { resumedAt: new Date().toISOString() })).status).toBe(200);
    expect((await report(executionId, 'completed', { completedAt: new Date().toISOString(), ...finalCounters })).status).toBe(200);

    const completed = await r.next((d) => d.body.type === 'execution.completed');
    expect(completed.signatureValid).toBe(true);
    expect(completed.body.data.execution).toMatchObject({ execution_uuid: executionId, status: 'completed', n_steps: 2 });
    expect(completed.body.id).toBe(completed.id);
    const polled = await call('GET', `/api/executions/${executionId}`);
    expect(completed.body.data.execution).toEqual(polled.json);
    await r.next((d) => d.body.type === 'execution.waiting');
    const started = r.heard.filter((d) => d.body.type === 'execution.started');
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ signatureValid: true, body: { timestamp: startedAt, data: { execution: { execution_uuid: executionId, status: 'running' } } } });
    expect(r.heard.every((d) => d.body.data.execution.execution_uuid === executionId)).toBe(true);
    const deliveries = (await call('GET', `/api/webhooks/${hook.id}/deliveries`)).json.items as { id: string; state: string; attempts: { status: number }[] }[];
    expect(deliveries).toHaveLength(3);
    expect(deliveries.every((d) => d.state === 'delivered' && d.attempts.length === 1 && d.attempts[0]?.status === 204)).toBe(true);
  });

  it('retries a receiver that fails its first attempts, with the same id on every attempt, and keeps each attempt', async () => {
    const { r, secret } = await receiver((_d, n) => ({ status: n <= 2 ? 503 : 200 }));
    const { executionId } = await newExecution();
    const hook = await makeWebhook(r.url, ['execution.failed']);
    secret.value = hook.secret;
    expect((await report(executionId, 'failed', { failedAt: new Date().toISOString(), error: { code: 'internal', message: 'no' } })).status).toBe(200);
    await r.next((_d) => r.heard.length >= 3);
    expect(r.heard.map((d) => d.signatureValid)).toEqual([true, true, true]);
    expect(new Set(r.heard.map((d) => d.id)).size).toBe(1);
    const deliveries = await waitForDelivery(hook.id, (d) => d.state === 'delivered');
    expect(deliveries.id).toBe(r.heard[0]?.id);
    expect(deliveries.attempts.map((a) => [a.status, a.error])).toEqual([[503, 'HTTP 503'], [503, 'HTTP 503'], [200, null]]);
    expect(deliveries.attempts.every((a) => a.latencyMs >= 0 && !Number.isNaN(Date.parse(a.attemptedAt)))).toBe(true);

    // Send again: the same id once more, one more attempt kept.
    const again = await call('POST', `/api/webhooks/${hook.id}/deliveries/${deliveries.id}/retry`);
    expect(again.status).toBe(202);
    await r.next(() => r.heard.length >= 4);
    expect(r.heard[3]?.id).toBe(deliveries.id);
    expect((await waitForDelivery(hook.id, (d) => d.attempts.length === 4)).state).toBe('delivered');
  });

  it('goes on retrying after the service restarts: what is owed is in Redis', async () => {
    let restarted = false;
    const { r, secret } = await receiver(() => ({ status: restarted ? 200 : 500 }));
    const { executionId } = await newExecution();
    const hook = await makeWebhook(r.url, ['execution.started']);
    secret.value = hook.secret;
    expect((await report(executionId, 'started', { startedAt: new Date().toISOString() })).status).toBe(200);
    const first = await r.next(() => true);
    await api.close();
    api = await startLocalServer(opts);
    restarted = true;
    const delivered = await waitForDelivery(hook.id, (d) => d.state === 'delivered');
    expect(delivered.id).toBe(first.id);
    expect(new Set(r.heard.map((d) => d.id))).toEqual(new Set([first.id]));
    expect(r.heard.every((d) => d.signatureValid)).toBe(true);
    expect(delivered.attempts[0]?.status).toBe(500);
    expect(delivered.attempts.at(-1)?.status).toBe(200);
  });

  it('refuses a redirect: the attempt fails and the place it points to hears nothing', async () => {
    const { r: elsewhere } = await receiver();
    const { r } = await receiver(() => ({ status: 302, headers: { location: elsewhere.url } }));
    const { executionId } = await newExecution();
    const hook = await makeWebhook(r.url, ['execution.started']);
    expect((await report(executionId, 'started', { startedAt: new Date().toISOString() })).status).toBe(200);
    const delivery = await waitForDelivery(hook.id, (d) => d.attempts.length >= 2);
    expect(delivery.state).toBe('pending');
    expect(delivery.attempts[0]).toMatchObject({ status: 302, error: 'HTTP 302: redirects are not followed' });
    expect(elsewhere.heard).toHaveLength(0);
    expect((await call('DELETE', `/api/webhooks/${hook.id}`)).status).toBe(204);
  });

  it('refuses link-local and metadata targets in every spelling with 422, before any connection', async () => {
    const before = connections.length;
    const spellings = [
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/',
      'http://0xa9fea9fe/',
      'http://0251.0376.0251.0376/',
      'http://169.254.43518/',
      'http://[::ffff:169.254.169.254]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://[0:0:0:0:0:ffff:a9fe:a9fe]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[fe80::1]/',
      'http://[fd00:ec2::254]/',
      'http://[fd00:ec2::1]/',
      'http://[::ffff:0:a9fe:a9fe]/',
      'http://[64:ff9b:1::a9fe:a9fe]/',
      'http://[2001:0:4136:e378:8000:63bf:5601:5601]/',
      'https://0.0.0.0/',
      // Private networks and CGNAT: refused unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=true.
      'http://10.1.2.3/',
      'http://172.16.0.1/',
      'https://192.168.1.5/x',
      'http://100.64.0.1/',
      'http://[fd12:3456::1]/',
      'http://[::ffff:10.0.0.1]/',
    ];
    for (const url of spellings) {
      const made = await call('POST', '/api/webhooks', { url, events: ['execution.completed'] });
      expect(made.status, url).toBe(422);
      expect(made.json.detail).toEqual([expect.objectContaining({ loc: ['body', 'url'], type: 'url' })]);
    }
    names.set('metadata.test', ['169.254.169.254']);
    const byName = await call('POST', '/api/webhooks', { url: 'http://metadata.test/', events: ['execution.completed'] });
    expect(byName.status).toBe(422);
    expect(String((byName.json.detail as { msg: string }[])[0]?.msg)).toContain('metadata.test resolves to a link-local, metadata or non-host address');
    names.set('intranet.test', ['192.168.7.7']);
    const privateName = await call('POST', '/api/webhooks', { url: 'http://intranet.test/', events: ['execution.completed'] });
    expect(privateName.status).toBe(422);
    expect(String((privateName.json.detail as { msg: string }[])[0]?.msg)).toContain('intranet.test resolves to a private network address');
    expect(connections.length).toBe(before);
    const listed = (await call('GET', '/api/webhooks')).json.items as { url: string }[];
    expect(listed.some((h) => h.url.includes('169.254') || h.url.includes('a9fe') || h.url.includes('metadata') || h.url.includes('intranet'))).toBe(false);
  });

  it('checks the name again at delivery: a name that now resolves to the metadata address is refused without a connection', async () => {
    const { r } = await receiver();
    const port = new URL(r.url).port;
    // Loopback when the webhook is made, the metadata address at every delivery after.
    names.set('rebind.test', ['127.0.0.1']);
    const { executionId } = await newExecution();
    const hook = await makeWebhook(`http://rebind.test:${port}/hook`, ['execution.started']);
    names.set('rebind.test', Array.from({ length: 100 }, () => '169.254.169.254'));
    const before = connections.length;
    expect((await report(executionId, 'started', { startedAt: new Date().toISOString() })).status).toBe(200);
    const delivery = await waitForDelivery(hook.id, (d) => d.attempts.length >= 2);
    expect(delivery.attempts[0]).toMatchObject({ status: null, error: 'refused before connecting: rebind.test resolves to a link-local, metadata or non-host address' });
    expect(connections.slice(before).filter((c) => c.address === '169.254.169.254')).toEqual([]);
    expect(r.heard).toHaveLength(0);
    await call('DELETE', `/api/webhooks/${hook.id}`);
  });

  it('takes a private-network receiver when WEBHOOK_ALLOW_PRIVATE_NETWORKS is on, still never a metadata one', async () => {
    const allowing = await startLocalServer({ ...opts, port: 0, keyPrefix: `${opts.keyPrefix}private:`, webhookAllowPrivateNetworks: true });
    try {
      const make = async (url: string) => {
        const res = await fetch(`${allowing.url}/api/webhooks`, { method: 'POST', headers: { 'x-service-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ url, events: ['execution.completed'] }) });
        await res.body?.cancel();
        return res.status;
      };
      names.set('intranet.test', ['192.168.7.7']);
      expect(await make('http://10.1.2.3/hook')).toBe(201);
      expect(await make('http://[fd12:3456::1]/hook')).toBe(201);
      expect(await make('http://intranet.test/hook')).toBe(201);
      expect(await make('http://169.254.169.254/')).toBe(422);
      expect(await make('http://[fd00:ec2::254]/')).toBe(422);
    } finally {
      await allowing.close();
    }
  });

  it('says once that the secrets are kept unencrypted without PROFILE_KEYS, and only when there is a webhook', async () => {
    const UNSEALED = 'PROFILE_KEYS is not set: webhook secrets are kept in Redis unencrypted';
    const own = { ...opts, keyPrefix: `{api-unsealed-${randomUUID().slice(0, 8)}}:` };
    const start = async () => {
      const log = createLogLines();
      const server = await startLocalServer({ ...own, logger: createLogger({ level: 'info', destination: log as unknown as NodeJS.WritableStream }) });
      return { server, warnings: () => log.lines.filter((l) => l.msg === UNSEALED).length };
    };
    // No webhook: nothing to say at the start.
    const first = await start();
    try {
      expect(first.warnings()).toBe(0);
      const made = await fetch(`${first.server.url}/api/webhooks`, { method: 'POST', headers: { 'x-service-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ url: 'http://127.0.0.1:9/a', events: ['execution.completed'] }) });
      expect(made.status).toBe(201);
      // The first webhook made says it; the next does not say it again.
      expect(first.warnings()).toBe(1);
      const again = await fetch(`${first.server.url}/api/webhooks`, { method: 'POST', headers: { 'x-service-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ url: 'http://127.0.0.1:9/b', events: ['execution.failed'] }) });
      expect(again.status).toBe(201);
      expect(first.warnings()).toBe(1);
    } finally {
      await first.server.close();
    }
    // A start with webhooks stored says it once, during the start.
    const second = await start();
    try {
      expect(second.warnings()).toBe(1);
    } finally {
      await second.server.close();
    }
  });

  it('keeps what a caller makes bounded: 100 webhooks, the last 50 attempts, records for 30 days, one round at a time', async () => {
    const existing = ((await call('GET', '/api/webhooks')).json.items as unknown[]).length;
    const made: string[] = [];
    for (let i = existing; i < 100; i += 1) made.push((await makeWebhook(`http://127.0.0.1:9/hook-${i}`, ['execution.completed'])).id);
    const past = await call('POST', '/api/webhooks', { url: 'http://127.0.0.1:9/one-more', events: ['execution.completed'] });
    expect(past.status).toBe(422);
    expect(past.json.detail).toEqual([{ loc: ['body'], msg: 'at most 100 webhooks: delete one to make another', type: 'limit' }]);
    for (const id of made) expect((await call('DELETE', `/api/webhooks/${id}`)).status).toBe(204);

    // A receiver that always fails: 51 attempts (50 retries here), the last 50 kept.
    const { r } = await receiver(() => ({ status: 503 }));
    const { executionId } = await newExecution();
    const hook = await makeWebhook(r.url, ['execution.failed']);
    expect((await report(executionId, 'failed', { failedAt: new Date().toISOString(), error: { code: 'internal', message: 'no' } })).status).toBe(200);
    const failed = await waitForDelivery(hook.id, (d) => d.state === 'failed');
    expect(r.heard).toHaveLength(51);
    expect(failed.attempts).toHaveLength(50);

    const direct = new Redis(redis.url);
    try {
      const ttlMs = await direct.pttl(`${opts.keyPrefix}webhook:${hook.id}:delivery:${failed.id}`);
      expect(ttlMs).toBeGreaterThan(29 * 86_400_000);
      expect(ttlMs).toBeLessThanOrEqual(30 * 86_400_000);
    } finally {
      direct.disconnect();
    }

    expect((await call('POST', `/api/webhooks/${hook.id}/deliveries/${failed.id}/retry`)).status).toBe(202);
    const twice = await call('POST', `/api/webhooks/${hook.id}/deliveries/${failed.id}/retry`);
    expect(twice.status).toBe(409);
    expect(twice.json.detail).toEqual([{ loc: ['path', 'deliveryId'], msg: 'a round of attempts is still pending', type: 'conflict' }]);
    await call('DELETE', `/api/webhooks/${hook.id}`);
  }, 120_000);
});

type Delivery = { id: string; state: string; attempts: { attemptedAt: string; status: number | null; latencyMs: number; error: string | null }[] };

/** Polls the deliveries list (what the dashboard shows) until one matches: the record is written after the receiver answered. */
async function waitForDelivery(webhookId: string, match: (d: Delivery) => boolean): Promise<Delivery> {
  for (;;) {
    const items = (await call('GET', `/api/webhooks/${webhookId}/deliveries`)).json.items as Delivery[];
    const found = items.find(match);
    if (found) return found;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export type { HeardDelivery };
