import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { ShopOptions } from '../../demo/shop-server.js';
import { withinMs } from '../../src/browser/settle.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import { startDaemon, type Daemon, type DaemonOptions } from '../../src/daemon.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import { createLogger, createSilentLogger } from '../../src/telemetry/logger.js';
import { httpCall, type Call } from './call.js';
import { hostRules, tempDir } from './env.js';
import { createLogLines, type LogLine } from './log-lines.js';
import { startRedis, type TestRedis } from './redis.js';
import { startScriptedModelServer, type Script, type ScriptedModelServer } from './scripted-model-server.js';
import { startShopServer, type ShopServer } from './shop-server.js';

/**
 * The daemon stack of the end-to-end tests, set up in one place: a private Redis, the shop
 * (`shop.test`), the local API (`serve`) with its artifacts in a temporary folder, the scripted
 * model server when the test scripts the model, and the worker daemon on the API's queue.
 * `close` ends them in reverse and removes the folder; it fails when the model server refused a
 * request that breaks the API's rules (its `stop()` says which).
 *
 * Beneath it, `startTestWorker`: the worker daemon alone (with its scripted model, a queue handle
 * and its log) on a Redis and an API the test has, for the tests whose API is another
 * (`recording-api.ts`) or whose parts are their own.
 */

/** A queue name of its own for a test: `name-` and 8 random characters. */
export const uniqueName = (name: string): string => `${name}-${randomUUID().slice(0, 8)}`;

export interface TestWorkerOptions {
  redisUrl: string;
  /** The executions queue the daemon takes its jobs from. */
  queueName: string;
  /** The API the worker reports to, and its key. */
  apiUrl: string;
  key: string;
  /** What the scripted model answers; without one the worker has no model key (or `daemon.recording`). */
  model?: Script;
  /** More of the worker's settings (`WORK_DIR`, `BROWSER_HOST_RULES`, …); they override the above. */
  env?: Record<string, string>;
  daemon?: DaemonOptions;
  /** The level of the worker's log, kept in `log`; without it the worker logs nothing. */
  logLevel?: 'info' | 'debug';
}

export interface TestWorker<Model extends ScriptedModelServer | undefined = ScriptedModelServer | undefined> {
  config: Config;
  daemon: Daemon;
  /** The scripted model server; undefined when no model was scripted. */
  model: Model;
  /** A BullMQ handle on the executions queue, to add and await jobs. */
  queue: Queue;
  /** The worker's log as written (`text`) and parsed (`lines`); empty without `logLevel`. */
  log: { text(): string; lines: LogLine[] };
  /**
   * `promise`, or an error after `ms` naming `what` and the worker's last log lines (where a
   * bare test timeout would say nothing).
   */
  waitFor<T>(what: string, promise: Promise<T>, ms: number): Promise<T>;
  /** Shuts the daemon down, closes the queue handle, stops the model server (failing as it does). */
  stop(): Promise<void>;
}

export async function startTestWorker(options: TestWorkerOptions & { model: Script }): Promise<TestWorker<ScriptedModelServer>>;
export async function startTestWorker(options: TestWorkerOptions & { model?: undefined }): Promise<TestWorker<undefined>>;
export async function startTestWorker(options: TestWorkerOptions): Promise<TestWorker>;
export async function startTestWorker(options: TestWorkerOptions): Promise<TestWorker> {
  const opened: Array<() => Promise<unknown>> = [];
  const stop = closer(opened);
  try {
    const model = options.model ? await startScriptedModelServer(options.model) : undefined;
    if (model) opened.push(() => model.stop());
    const config = loadConfig({
      REDIS_URL: options.redisUrl,
      EXECUTION_QUEUE: options.queueName,
      API_BASE_URL: options.apiUrl,
      API_KEY: options.key,
      ...(model ? { ANTHROPIC_API_KEY: 'anthropic-key-for-tests', ANTHROPIC_BASE_URL: model.url } : {}),
      ...options.env,
    });
    let text = '';
    const log = createLogLines();
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += String(chunk);
        log.write(String(chunk));
        done();
      },
    });
    const logger = options.logLevel ? createLogger({ level: options.logLevel, destination }) : createSilentLogger();
    const daemon = await startDaemon(config, logger, options.daemon);
    const queue = new Queue(options.queueName, { connection: { url: options.redisUrl }, prefix: 'bull' });
    // Closed in reverse: the daemon shuts down, then the queue handle closes.
    opened.push(() => queue.close(), () => daemon.shutdown('test over'));
    return {
      config,
      daemon,
      model,
      queue,
      log: { text: () => text, lines: log.lines },
      waitFor: (what, promise, ms) => withinMs(Math.max(0, ms), promise, () => new Error(`still waiting for ${what} after ${ms} ms; the worker's last log lines: ${lastLines(log.lines, 8)}`)),
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/** The last `n` log lines, one short line each: level, message, execution, code, error. */
function lastLines(lines: LogLine[], n: number): string {
  const brief = ({ level, msg, executionId, code, err }: LogLine) => [level, msg, executionId, code, err].filter((v) => v !== undefined).map(String).join(' ');
  return lines.slice(-n).map(brief).join(' | ') || '(none)';
}

/** Runs the steps in reverse, each whatever the others did, then fails as the first that failed. */
function closer(opened: Array<() => Promise<unknown>>): () => Promise<void> {
  return async () => {
    const results: PromiseSettledResult<unknown>[] = [];
    for (const step of opened.reverse()) results.push(...(await Promise.allSettled([step()])));
    opened.length = 0;
    const refused = results.find((r) => r.status === 'rejected');
    if (refused) throw refused.reason;
  };
}

export interface DaemonStackOptions {
  /** Names the temporary folder and the queue. */
  name: string;
  /** The API key of the local API and the worker. */
  key: string;
  /** What the scripted model answers; without one the daemon is given `daemon.recording`. */
  model?: Script;
  shop?: ShopOptions;
  /** More of the worker's settings (`VIDEO_FPS`, `WORKER_CONCURRENCY`, `BROWSER_HOST_RULES`, …). */
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
  const close = closer(opened);
  try {
    const [redis, shop, dir] = await Promise.all([startRedis(), startShopServer('shop.test', options.shop), tempDir(options.name)]);
    opened.push(() => rm(dir, { recursive: true, force: true }), () => redis.stop(), () => shop.close());
    const queueName = uniqueName(options.name);
    const artifactsDir = path.join(dir, 'artifacts');
    const api = await startLocalServer({ port: 0, apiKeys: [options.key], redisUrl: redis.url, queueName, queuePrefix: 'bull', artifactsDir, logger: createSilentLogger(), keyPrefix: `{api-${queueName}}:` });
    opened.push(() => api.close());
    const worker = await startTestWorker({
      redisUrl: redis.url,
      queueName,
      apiUrl: api.url,
      key: options.key,
      model: options.model,
      env: { ARTIFACTS_DIR: artifactsDir, ARTIFACT_BASE_URL: `${api.url}/artifacts/`, BROWSER_HOST_RULES: hostRules('shop.test'), WORK_DIR: path.join(dir, 'work'), ...options.env },
      daemon: options.daemon,
    });
    opened.push(() => worker.stop());
    const call = httpCall(api.url, { 'x-service-key': options.key });
    return { redis, shop, dir, api, model: worker.model, worker: worker.daemon, queueName, queue: worker.queue, call, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
