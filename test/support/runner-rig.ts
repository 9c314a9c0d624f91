import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createBrowser, createRunnerDeps } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createRedisRunCache, type RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from './env.js';
import { startRedis, type TestRedis } from './redis.js';
import { startScriptedModelServer, type RecordedRequest, type Script } from './scripted-model-server.js';

/**
 * The runner on real parts without a daemon, for the run cache's tests: a private Redis with the
 * run cache on it (prefix `bull`), the site under test, one Chromium, a temporary folder for the
 * work and the artifacts; `run` runs one execution with its own scripted model server. `close`
 * ends them all and removes the folder.
 */

export interface RunnerRig<App> {
  redis: TestRedis;
  cache: RedisRunCache;
  app: App;
  browser: BrowserSandbox;
  dir: string;
  config: Config;
  /** Runs one execution against a scripted model (with `config`, the rig's by default); a skipped run fails. */
  run(script: Script, job: { workflowId: string; workflowVersionId: string; inputPayload: unknown; specification: Record<string, unknown> }, config?: Config): Promise<RigRun>;
  close(): Promise<void>;
}

export interface RigRun {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  /** Input tokens of the requests, by the scripted API's accounting (uncached, cache reads and writes). */
  tokens: number;
  /** logs.jsonl, parsed. */
  events: Array<Record<string, unknown>>;
}

export async function startRunnerRig<App extends { close(): Promise<unknown> }>(options: {
  /** Names the temporary folder. */
  name: string;
  /** The run cache's queue. */
  queue: string;
  app: () => Promise<App>;
  /** `BROWSER_HOST_RULES` for the app. */
  hostRules: (app: App) => string;
}): Promise<RunnerRig<App>> {
  const logger = createSilentLogger();
  const [redis, app, dir] = await Promise.all([startRedis(), options.app(), tempDir(options.name)]);
  const config = loadConfig({ ANTHROPIC_API_KEY: 'sk-test', BROWSER_HOST_RULES: options.hostRules(app), WORK_DIR: dir, VIDEO_ENABLED: 'false', LOG_LEVEL: 'silent' });
  const cache = createRedisRunCache({ redisUrl: redis.url, prefix: 'bull', queue: options.queue, ttlMs: 60_000, logger });
  const browser = createBrowser(config, logger);
  return {
    redis,
    cache,
    app,
    browser,
    dir,
    config,
    async run(script, job, runConfig = config) {
      const model = await startScriptedModelServer(script);
      try {
        const deps = createRunnerDeps({ config: { ...runConfig, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir, prefix: '' }), runCache: cache });
        const summary = await runExecution(deps, { executionId: randomUUID(), ...job }, new AbortController().signal);
        if (summary.status === 'skipped') throw new Error('unexpected skip');
        const logs = await readFile(fileURLToPath(summary.urls.logsUrl!), 'utf8');
        return {
          summary,
          requests: model.requests,
          tokens: model.accounting.reduce((sum, a) => sum + (a?.total ?? 0), 0),
          events: logs.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>),
        };
      } finally {
        await model.stop();
      }
    },
    async close() {
      await browser.close();
      await cache.close();
      await Promise.allSettled([redis.stop(), app.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
