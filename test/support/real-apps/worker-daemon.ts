import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { runCacheKey } from '../../../src/domain/run-cache.js';
import type { RecordingApi } from '../recording-api.js';
import type { RecordedRequest, ScriptedTurn } from '../scripted-model-server.js';
import { startTestWorker, uniqueName } from '../stack.js';

/**
 * The worker daemon for tests on real applications: BullMQ on the test's Redis, the run cache
 * on, Chromium, the SDK against one scripted model server whose answers come from the model of
 * the execution under way (`run` takes one execution at a time), artifacts on disk.
 */
export interface RealAppWorker {
  /** Queues an execution, waits for its final report, and returns what the run left. */
  run(job: { workflowVersionId: string; inputPayload: unknown; specification: Record<string, unknown> }, model: (request: RecordedRequest) => ScriptedTurn): Promise<FinishedRun>;
  stop(): Promise<void>;
  /** The run cache's Redis key of a workflow version (docs/run-cache.md#where-it-is-kept). */
  cacheKey(versionId: string): string;
}

export interface FinishedRun {
  executionId: string;
  /** The API's final report: `completed` or `failed`, and its body. */
  report: { outcome: 'completed' | 'failed'; body: Record<string, unknown> };
  /** output.json */
  output: Record<string, unknown> & { status: string; cache: Record<string, unknown> };
  /** logs.jsonl, parsed. */
  events: Array<Record<string, unknown>>;
  /** The requests this execution made to the model. */
  requests: RecordedRequest[];
  /** The input tokens of those requests, by the scripted API's accounting (everything the model saw). */
  inputTokens: number;
  /** How long the run took, from queueing to its final report. */
  wallMs: number;
}

export async function startRealAppWorker(options: { redisUrl: string; api: RecordingApi; hostRules: string; dir: string; runTimeoutMs?: number }): Promise<RealAppWorker> {
  let current: ((request: RecordedRequest) => ScriptedTurn) | undefined;
  const artifacts = path.join(options.dir, 'artifacts');
  const worker = await startTestWorker({
    redisUrl: options.redisUrl,
    queueName: uniqueName('real-apps'),
    apiUrl: options.api.url,
    key: 'real-apps-service-key',
    model: (request) => {
      if (!current) throw new Error('a model request came while no execution was under way');
      return current(request);
    },
    logLevel: 'info',
    env: {
      WORKER_CONCURRENCY: '1',
      ANTHROPIC_API_KEY: 'sk-real-apps',
      ANTHROPIC_MAX_RETRIES: '0',
      BROWSER_HOST_RULES: options.hostRules,
      WORK_DIR: path.join(options.dir, 'work'),
      ARTIFACTS_DIR: artifacts,
      VIDEO_ENABLED: 'false',
      RUN_CACHE: 'on',
    },
  });
  const { model, queue, config } = worker;
  const runTimeoutMs = options.runTimeoutMs ?? 240_000;

  return {
    async run(job, script) {
      const executionId = randomUUID();
      const first = model.requests.length;
      const startedAt = Date.now();
      current = script;
      try {
        await queue.add('execute', { executionId, workflowId: 'wf-real-app', ...job }, { jobId: executionId });
        const final = await worker.waitFor(`the final report of ${executionId}`, options.api.waitForFinal(executionId), runTimeoutMs);
        const folder = path.join(artifacts, 'executions', executionId);
        const output = JSON.parse(await readFile(path.join(folder, 'output.json'), 'utf8')) as FinishedRun['output'];
        const events = (await readFile(path.join(folder, 'logs.jsonl'), 'utf8'))
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, unknown>);
        return {
          executionId,
          report: { outcome: final.path.endsWith('/completed') ? 'completed' : 'failed', body: final.body as Record<string, unknown> },
          output,
          events,
          requests: model.requests.slice(first),
          inputTokens: model.accounting.slice(first).reduce((sum, a) => sum + (a?.total ?? 0), 0),
          wallMs: Date.now() - startedAt,
        };
      } finally {
        current = undefined;
      }
    },
    cacheKey: (versionId) => runCacheKey(config.QUEUE_PREFIX, config.EXECUTION_QUEUE, versionId),
    stop: () => worker.stop(),
  };
}
