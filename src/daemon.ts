import { createArtifactStore, createBrowser, createProfileStore, createRecorder, createRunnerDeps } from './compose.js';
import { chromiumSandboxDisabled } from './browser/playwright-sandbox.js';
import type { Config } from './config/schema.js';
import path from 'node:path';
import { createHttpControlPlane } from './control-plane/http-client.js';
import { createOutbox } from './control-plane/outbox.js';
import { createSpoolingStore } from './storage/spool.js';
import { createRedisRunCache } from './storage/redis-run-cache.js';
import { abortReason } from './contract/errors.js';
import { createBullmqIntake } from './intake/bullmq-intake.js';
import type { Intake } from './intake/types.js';
import { Scope } from './runner/scope.js';
import { createRedisLiveRelay } from './live/redis-live-relay.js';
import { createRedisHumanDesk } from './human/redis-desk.js';
import { runExecution } from './runner/run-execution.js';
import { startHealthServer, type HealthServer } from './telemetry/health.js';
import { createMetrics } from './telemetry/metrics.js';
import { createCapacity } from './telemetry/capacity.js';
import type { Playback } from './runner/types.js';
import { modelKeyMissing, NO_KEY_AT_START } from './model/no-key-client.js';
import type { Logger, Tracing } from './telemetry/types.js';
import type { RecordingFile } from './contract/recording.js';

/**
 * The daemon (docs/operations.md): explicit states, logged on change.
 *   starting → running → draining → stopped
 * Draining: no new job; running executions get SHUTDOWN_GRACE_MS, then are aborted with
 * `worker_shutdown`, finalised, uploaded and reported.
 */
const MB = 1024 * 1024;

export type DaemonState = 'starting' | 'running' | 'draining' | 'stopped';

export interface Daemon {
  readonly state: DaemonState;
  /** Starts draining; a second call cuts the grace period short. Resolves when stopped. */
  shutdown(why: string): Promise<void>;
  readonly healthPort: number | undefined;
}

/** How long aborted executions get to finalise (stop video, upload, report) after the grace. */
const FINALISE_AFTER_ABORT_MS = 60_000;
/** How long shutdown waits for the outbox to deliver before leaving reports on disk. */
const OUTBOX_DRAIN_MS = 10_000;

export interface DaemonOptions {
  /** A recording played back instead of calling Claude (the demo without an API key). */
  recording?: RecordingFile;
  /** What each execution played back says of it in output.json, and the one workflow it may play back (docs/counters-and-artifacts.md#playback). */
  playback?: Playback;
  /** Where each execution's trace goes (startTracing, in main.ts, which ends it after the daemon). */
  tracing?: Tracing;
}

export async function startDaemon(config: Config, logger: Logger, options: DaemonOptions = {}): Promise<Daemon> {
  let state: DaemonState = 'starting';
  const setState = (next: DaemonState) => {
    logger.info({ from: state, to: next }, `daemon ${next}`);
    state = next;
  };
  logger.info({ from: null, to: state, queue: config.EXECUTION_QUEUE, prefix: config.QUEUE_PREFIX, concurrency: config.WORKER_CONCURRENCY }, 'daemon starting');
  // Said once, at start, where the operator looks: every execution would fail with model_error.
  if (!options.recording && modelKeyMissing(config.ANTHROPIC_API_KEY)) logger.warn({}, NO_KEY_AT_START);

  // Everything the daemon opens, closed in reverse on every path: a failed start and a stop.
  // Hence the order below: what must close last (the connections) is opened first.
  const scope = new Scope((error, resource) => logger.warn({ err: error, resource }, 'the daemon could not close a resource'));
  try {
    const metrics = createMetrics();
    const { tracing } = options;
    const http = createHttpControlPlane({ baseUrl: config.API_BASE_URL!, apiKey: config.API_KEY!, logger: logger.child({ component: 'control-plane' }), ...(tracing ? { tracing } : {}) });
    // Final reports go through a durable outbox: stored first, delivered in the background.
    const controlPlane = scope.use('outbox', createOutbox({ dir: path.join(config.WORK_DIR, 'outbox'), inner: http, logger: logger.child({ component: 'outbox' }) }), (outbox) => outbox.close());
    await controlPlane.resume();
    // Artifacts the store refuses are spooled to disk and uploaded later (storage outages).
    const spool = { dir: path.join(config.WORK_DIR, 'spool'), logger: logger.child({ component: 'spool' }), retryEveryMs: config.UPLOAD_RETRY_INTERVAL_MS, onRetry: () => metrics.uploadRetried() };
    const store = scope.use('artifact store', createSpoolingStore({ inner: createArtifactStore(config, logger), ...spool }), (spooling) => spooling.close());
    await store.resume();
    // Browser profiles beside the artifacts (docs/profiles.md).
    const profileStore = scope.use('profile store', createProfileStore(config), (profiles) => profiles.close?.());
    // Versions' run caches live beside the queue, shared by every worker (docs/run-cache.md).
    const runCache =
      config.RUN_CACHE === 'on'
        ? scope.use('run cache', createRedisRunCache({ redisUrl: config.REDIS_URL, prefix: config.QUEUE_PREFIX, queue: config.EXECUTION_QUEUE, ttlMs: config.RUN_CACHE_TTL_MS, logger: logger.child({ component: 'run-cache' }) }), (cache) => cache.close())
        : undefined;
    const queueKeys = { redisUrl: config.REDIS_URL, queuePrefix: config.QUEUE_PREFIX, queueName: config.EXECUTION_QUEUE, logger };
    // Frames and steps of running executions reach the dashboard through Redis, only while watched.
    const live = scope.use('live relay', createRedisLiveRelay(queueKeys), (relay) => relay.close());
    // Answers of people to runs that wait for them, on a Redis stream per execution.
    const human = scope.use('human desk', createRedisHumanDesk(queueKeys), (desk) => desk.close());
    let health: HealthServer | undefined;
    scope.defer('health server', () => health?.close());
    // Once the runs, their browser and their encoders are gone, and only on a stop: reports still
    // undelivered then stay on disk, and the next start sends them.
    scope.defer('final reports', async () => {
      if (state === 'starting') return;
      if (!(await controlPlane.drain(OUTBOX_DRAIN_MS))) logger.warn({ pending: controlPlane.depth() }, 'final reports left in the outbox for the next start');
    });
    const recorder = createRecorder(config, logger);
    // Warm video encoders end once no execution runs (docs/operations.md#shared-video-encoder).
    if (recorder) scope.use('video encoders', recorder, (encoders) => encoders.close?.());
    const browser = scope.use('browser', createBrowser(config, logger, tracing), (chromium) => chromium.close());
    metrics.setBrowserSandbox(!chromiumSandboxDisabled());
    const deps = createRunnerDeps({
      config,
      profileStore,
      logger,
      browser,
      store,
      controlPlane,
      live,
      human,
      ...(recorder ? { recorder } : {}),
      ...(runCache ? { runCache } : {}),
      ...(options.recording ? { recording: options.recording } : {}),
      ...(options.playback ? { playback: options.playback } : {}),
      ...(tracing ? { tracing } : {}),
      observers: [(events, id) => metrics.watch(events, id)],
    });

    const capacity = createCapacity({
      maxMemoryBytes: config.WORKER_MAX_MEMORY_MB * MB,
      minFreeBytes: config.WORKER_MIN_FREE_MEMORY_MB * MB,
      perExecutionBytes: config.WORKER_EXECUTION_MEMORY_MB * MB,
    });
    const limitedByMemory = config.WORKER_MAX_MEMORY_MB > 0 || config.WORKER_MIN_FREE_MEMORY_MB > 0;
    const intake = scope.use(
      'intake',
      createBullmqIntake({
        redisUrl: config.REDIS_URL,
        ...(limitedByMemory ? { admission: capacity } : {}),
        queueName: config.EXECUTION_QUEUE,
        prefix: config.QUEUE_PREFIX,
        concurrency: config.WORKER_CONCURRENCY,
        lockDurationMs: config.QUEUE_LOCK_DURATION_MS,
        stalledIntervalMs: config.QUEUE_STALLED_INTERVAL_MS,
        logger: logger.child({ component: 'intake' }),
        handle: async (data, signal) => {
          const summary = await runExecution(deps, data, signal);
          return summary.status === 'skipped'
            ? { status: 'skipped' }
            : { status: summary.status, ...(summary.document.error ? { code: summary.document.error.code } : {}), maskedInput: summary.maskedInput };
        },
        onLost: (executionId) => controlPlane.reportFailed(executionId, lostReport()),
      }),
      (queue) => queue.close(),
    );
    metrics.setSources({
      activeExecutions: () => intake.activeCount,
      outboxDepth: () => controlPlane.depth(),
      freeSlots: () => {
        const byConcurrency = state !== 'running' ? 0 : Math.max(0, config.WORKER_CONCURRENCY - intake.activeCount);
        return limitedByMemory ? Math.min(byConcurrency, capacity.freeSlots(intake.activeCount)) : byConcurrency;
      },
      memoryBytes: () => capacity.reading().treeRssBytes,
    });

    if (config.HEALTH_PORT > 0) {
      health = await startHealthServer({
        port: config.HEALTH_PORT,
        registry: metrics.registry,
        checks: [
          {
            name: 'redis',
            check: async (signal) => {
              if (!(await intake.ping(signal))) throw new Error('redis does not answer');
            },
          },
          { name: 'browser', check: (signal) => browser.checkReady(signal) },
        ],
      });
    }
    await intake.start();
    setState('running');
    return started(intake, () => health?.port);
  } catch (error) {
    await scope.close();
    throw error;
  }

  /** The daemon once started: a stop drains the intake, then closes the scope. */
  function started(intake: Intake, healthPort: () => number | undefined): Daemon {
    // A second stop request ends the grace period at once.
    const cutShort = new AbortController();
    let stopping: Promise<void> | undefined;
    const stop = async (why: string) => {
      setState('draining');
      logger.info({ why, active: intake.activeCount, graceMs: config.SHUTDOWN_GRACE_MS }, 'taking no new job; waiting for running executions');
      await intake.stopTaking().catch((error: Error) => logger.warn({ err: error }, 'pausing the queue worker failed'));
      if (!(await intake.waitIdle(AbortSignal.any([AbortSignal.timeout(config.SHUTDOWN_GRACE_MS), cutShort.signal])))) {
        logger.warn({ active: intake.activeCount }, 'grace period over: stopping running executions');
        intake.abortAll(abortReason('worker_shutdown', 'the worker was shut down before the execution ended'));
        await intake.waitIdle(AbortSignal.timeout(FINALISE_AFTER_ABORT_MS));
      }
      await scope.close();
      setState('stopped');
    };
    return {
      get state() {
        return state;
      },
      get healthPort() {
        return healthPort();
      },
      shutdown(why) {
        if (stopping) {
          logger.warn({ why }, 'second stop request: cutting the grace period short');
          cutShort.abort();
          return stopping;
        }
        stopping = stop(why);
        return stopping;
      },
    };
  }
}

/** The report of an execution whose worker died mid-run: nothing was counted or kept. */
function lostReport() {
  return {
    failedAt: new Date().toISOString(),
    error: { code: 'worker_lost', message: 'the worker running this execution stopped mid-run' },
    durationMs: 0,
    nSteps: 0,
    nAgentActions: 0,
    nScreenshots: 0,
    outputUrl: null,
    videoUrl: null,
    logsUrl: null,
  } as const;
}
