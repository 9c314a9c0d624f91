import { Queue, type ConnectionOptions } from 'bullmq';
import type { RedisOptions } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { redisOptions } from '../../src/domain/redis-address.js';
import { spawnDaemon, stopAllDaemons, type DaemonProcess } from '../support/daemon-process.js';
import { hostRules, tempDir } from '../support/env.js';
import { startRecordingApi, type RecordedCall, type RecordingApi } from '../support/recording-api.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startScriptedModelServer, type RecordedRequest, type ScriptedModelServer, type ScriptedTurn } from '../support/scripted-model-server.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';

/**
 * What every fault test needs: a real Redis, the recording API, the fixture shop, a scripted
 * model server whose answers depend on a `[case:NAME]` marker in the execution's prompt, and
 * worker daemons as child processes. `close` stops all of it, whatever state it is in.
 */

export const API_KEY = 'fault-test-service-key';
export const ANTHROPIC_KEY = 'sk-ant-fault-test';

/** Chooses a model answer per case: `turn` is the number of model answers the execution already had. */
export type CaseScript = (turn: number, request: RecordedRequest) => ScriptedTurn;

export interface FaultRig {
  redis: TestRedis;
  api: RecordingApi;
  shop: ShopServer;
  model: ScriptedModelServer;
  /** Scratch root of this file; removed by `close`. */
  tmp: string;
  queueName: string;
  queue: Queue;
  /** Local artifact folder the workers store into (when no S3 is given). */
  artifactsDir: string;
  /** A specification whose prompt carries the case marker. */
  spec(caseName: string, extra?: Record<string, unknown>): Record<string, unknown>;
  /** Adds one execution's job (jobId = execution id); returns the execution id. */
  enqueue(caseName: string, data?: Record<string, unknown>): Promise<string>;
  /** Environment of a worker daemon; WORK_DIR is `workDir` (give the same one to restart a worker). */
  workerEnv(workDir: string, extra?: Record<string, string>): Record<string, string>;
  /** Spawns a worker and waits for `daemon running`. */
  startWorker(name: string, workDir: string, extra?: Record<string, string>): Promise<DaemonProcess>;
  /** Model requests of one case. */
  requestsOf(caseName: string): RecordedRequest[];
  /** Resolves when the `n`-th model request (1-based) of a case has arrived. */
  waitForRequest(caseName: string, n?: number): Promise<RecordedRequest>;
  close(): Promise<void>;
}

/**
 * `redis`: starts the Redis the rig uses (default: a private redis-server), with a scratch folder
 * removed by `close`; its url may be any REDIS_URL form. `clientOptions`: what the rig's own
 * queue client needs besides the url's options (a test CA).
 */
export async function startRig(label: string, cases: Record<string, CaseScript>, options: { redis?: (dir: string) => Promise<TestRedis>; clientOptions?: RedisOptions } = {}): Promise<FaultRig> {
  const tmp = await tempDir(`faults-${label}`);
  const requestWaiters = new Set<() => void>();
  const model = await startScriptedModelServer((request) => {
    const name = caseOf(request);
    const script = name ? cases[name] : undefined;
    queueMicrotask(() => {
      for (const wake of requestWaiters) wake();
    });
    if (!script) return { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: `no script for case ${name}` } }, headers: { 'x-should-retry': 'false' } };
    return script(turnOf(request), request);
  });
  const [redis, api, shop] = await Promise.all([options.redis ? mkdir(`${tmp}/redis`).then(() => options.redis!(`${tmp}/redis`)) : startRedis(), startRecordingApi(), startShopServer()]);
  const queueName = `faults-${label}-${randomUUID().slice(0, 8)}`;
  const queue = new Queue(queueName, { connection: redisOptions(redis.url, { maxRetriesPerRequest: null, ...options.clientOptions }) as ConnectionOptions });
  queue.on('error', () => undefined); // Redis restarts are on purpose in some tests.
  const artifactsDir = `${tmp}/artifacts`;

  const rig: FaultRig = {
    redis,
    api,
    shop,
    model,
    tmp,
    queueName,
    queue,
    artifactsDir,
    spec: (caseName, extra = {}) => ({ prompt: `[case:${caseName}] Look at the shop and report what you see.`, allowedDomains: [new URL(shop.origin).host], startUrl: `${shop.origin}/`, ...extra }),
    async enqueue(caseName, data = {}) {
      const executionId = randomUUID();
      await queue.add('execute', { executionId, workflowId: 'wf-faults', workflowVersionId: 'v-1', inputPayload: {}, specification: rig.spec(caseName), ...data }, { jobId: executionId });
      return executionId;
    },
    workerEnv: (workDir, extra = {}) => ({
      REDIS_URL: redis.url,
      EXECUTION_QUEUE: queueName,
      QUEUE_PREFIX: 'bull',
      WORKER_CONCURRENCY: '2',
      API_BASE_URL: api.url,
      API_KEY,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_MAX_RETRIES: '1',
      S3_BUCKET: '',
      ARTIFACTS_DIR: artifactsDir,
      BROWSER_HOST_RULES: hostRules('shop.test'),
      WORK_DIR: workDir,
      HEALTH_PORT: '0',
      SHUTDOWN_GRACE_MS: '30000',
      LOG_LEVEL: 'info',
      VIDEO_FPS: '5',
      ...extra,
    }),
    async startWorker(name, workDir, extra = {}) {
      const worker = spawnDaemon(name, rig.workerEnv(workDir, extra));
      await worker.waitForLog('daemon running');
      return worker;
    },
    requestsOf: (caseName) => model.requests.filter((r) => caseOf(r) === caseName),
    waitForRequest(caseName, n = 1) {
      return new Promise<RecordedRequest>((resolve) => {
        const check = () => {
          const found = rig.requestsOf(caseName);
          if (found.length >= n) {
            requestWaiters.delete(check);
            resolve(found[n - 1]!);
          }
        };
        requestWaiters.add(check);
        check();
      });
    },
    async close() {
      await stopAllDaemons();
      const stopped = await Promise.allSettled([queue.close(), model.stop(), api.close(), shop.close()]);
      await redis.stop();
      await rm(tmp, { recursive: true, force: true });
      // The model server refuses requests that break the API's rules (its stop() says which).
      if (stopped[1].status === 'rejected') throw stopped[1].reason;
    },
  };
  return rig;
}

/** The `[case:NAME]` marker of the execution a model request belongs to. */
export function caseOf(request: RecordedRequest): string | undefined {
  return /\[case:([\w-]+)\]/.exec(request.rawBody)?.[1];
}

/** How many model answers the execution had before this request. */
export function turnOf(request: RecordedRequest): number {
  const messages = (request.body as { messages?: Array<{ role: string }> }).messages ?? [];
  return messages.filter((m) => m.role === 'assistant').length;
}

/** `started` calls and final reports the API received for one execution. */
export function callsOf(api: RecordingApi, executionId: string): { started: RecordedCall[]; finals: RecordedCall[] } {
  const mine = api.calls.filter((c) => c.method === 'POST' && c.path.startsWith(`/api/executions/${executionId}/`));
  return { started: mine.filter((c) => c.path.endsWith('/started')), finals: mine.filter((c) => /\/(completed|failed)$/.test(c.path)) };
}

/** The one final report of an execution, with its kind; throws unless exactly one arrived. */
export function onlyFinal(api: RecordingApi, executionId: string): { kind: 'completed' | 'failed'; body: Record<string, unknown> } {
  const { finals } = callsOf(api, executionId);
  if (finals.length !== 1) throw new Error(`${executionId}: expected exactly one final report, got ${finals.length}`);
  return { kind: finals[0]!.path.endsWith('/completed') ? 'completed' : 'failed', body: finals[0]!.body as Record<string, unknown> };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `probe` until it returns a value (bounded): only where nothing emits an event. */
export async function pollUntil<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** GET over a fresh connection (no keep-alive socket the server may have dropped meanwhile). */
export function httpGet(url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, timeout: 20_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}
