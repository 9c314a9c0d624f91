import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { ShopOptions } from '../../demo/shop-server.js';
import { loadConfig } from '../../src/config/schema.js';
import { startDaemon, type Daemon, type DaemonOptions } from '../../src/daemon.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { httpCall, type Call } from './call.js';
import { hostRules, tempDir } from './env.js';
import { startRedis, type TestRedis } from './redis.js';
import { startScriptedModelServer, type Script, type ScriptedModelServer } from './scripted-model-server.js';
import { startShopServer, type ShopServer } from './shop-server.js';

/**
 * The daemon stack of the end-to-end tests, set up in one place: a private Redis, the shop
 * (`shop.test`), the local API (`serve`) with its artifacts in a temporary folder, the scripted
 * model server when the test scripts the model, and the worker daemon on the API's queue.
 * `close` ends them in reverse and removes the folder; it fails when the model server refused a
 * request that breaks the API's rules (its `stop()` says which).
 */

export interface DaemonStackOptions {
  /** Names the temporary folder and the queue. */
  name: string;
  /** The API key of the local API and the worker. */
  key: string;
  /** What the scripted model answers; without one the daemon is given `daemon.recording`. */
  model?: Script;
  shop?: ShopOptions;
  /** More of the worker's settings (`VIDEO_FPS`, `WORKER_CONCURRENCY`, …). */
  env?: Record<string, string>;
  daemon?: DaemonOptions;
}

export interface DaemonStack<Model extends ScriptedModelServer | undefined = ScriptedModelServer | undefined> {
  redis: TestRedis;
  shop: ShopServer;
  /** The temporary folder: `artifacts/` (the API's), `work/` (the worker's). */
  dir: string;
  api: LocalServer;
  /** The scripted model server; undefined when no model was scripted. */
  model: Model;
  worker: Daemon;
  queueName: string;
  /** A BullMQ handle on the executions queue, to await jobs. */
  queue: Queue;
  /** Requests to the local API with the key. */
  call: Call;
  close(): Promise<void>;
}

export async function startDaemonStack(options: DaemonStackOptions & { model: Script }): Promise<DaemonStack<ScriptedModelServer>>;
export async function startDaemonStack(options: DaemonStackOptions & { model?: undefined }): Promise<DaemonStack<undefined>>;
export async function startDaemonStack(options: DaemonStackOptions): Promise<DaemonStack> {
  const opened: Array<() => Promise<unknown>> = [];
  const close = async () => {
    const results: PromiseSettledResult<unknown>[] = [];
    for (const step of opened.reverse()) results.push(...(await Promise.allSettled([step()])));
    opened.length = 0;
    const refused = results.find((r) => r.status === 'rejected');
    if (refused) throw refused.reason;
  };
  try {
    const [redis, shop, dir] = await Promise.all([startRedis(), startShopServer('shop.test', options.shop), tempDir(options.name)]);
    opened.push(() => rm(dir, { recursive: true, force: true }), () => redis.stop(), () => shop.close());
    const queueName = `${options.name}-${randomUUID().slice(0, 8)}`;
    const artifactsDir = path.join(dir, 'artifacts');
    const logger = createSilentLogger();
    const api = await startLocalServer({ port: 0, apiKeys: [options.key], redisUrl: redis.url, queueName, queuePrefix: 'bull', artifactsDir, logger, keyPrefix: `{api-${queueName}}:` });
    opened.push(() => api.close());
    const model = options.model ? await startScriptedModelServer(options.model) : undefined;
    if (model) opened.push(() => model.stop());
    const config = loadConfig({
      REDIS_URL: redis.url,
      EXECUTION_QUEUE: queueName,
      API_BASE_URL: api.url,
      API_KEY: options.key,
      ...(model ? { ANTHROPIC_API_KEY: 'anthropic-key-for-tests', ANTHROPIC_BASE_URL: model.url } : {}),
      ARTIFACTS_DIR: artifactsDir,
      ARTIFACT_BASE_URL: `${api.url}/artifacts/`,
      BROWSER_HOST_RULES: hostRules('shop.test'),
      WORK_DIR: path.join(dir, 'work'),
      ...options.env,
    });
    const worker = await startDaemon(config, logger, options.daemon);
    const queue = new Queue(queueName, { connection: { url: redis.url }, prefix: 'bull' });
    // Closed in reverse: the daemon shuts down, then the queue handle closes.
    opened.push(() => queue.close(), () => worker.shutdown('test over'));
    const call = httpCall(api.url, { 'x-service-key': options.key });
    return { redis, shop, dir, api, model, worker, queueName, queue, call, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
