import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { Job, Queue, type QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionList } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import { schedulesQueueName } from '../../src/local-service/schedules.js';
import { answerAs } from '../support/answer-as.js';
import { httpCall } from '../support/call.js';
import { createLogLines, type LogLine } from '../support/log-lines.js';
import { openQueueEvents } from '../support/queue-events.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * Two real `execution-worker serve` processes on one Redis, with the test-only
 * TEST_ONLY_SCHEDULE_EVERY_SECOND: a version scheduled every second makes one execution per
 * tick, whichever process takes it. Ticks are counted from the scheduler's own jobs.
 */

const KEY = 'serve-test-key';
const LIMIT_MS = 60_000;

interface Serve {
  child: ChildProcess;
  logs: LogLine[];
  url: string;
}

let redis: TestRedis;
let queueName: string;
let ticks: Queue;
let events: QueueEvents;
const serves: Serve[] = [];

async function startServe(): Promise<Serve> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/cli-entry.ts', 'serve'], {
    env: { ...process.env, PORT: '0', API_KEYS: KEY, REDIS_URL: redis.url, EXECUTION_QUEUE: queueName, QUEUE_PREFIX: 'bull', LOG_LEVEL: 'info', TEST_ONLY_SCHEDULE_EVERY_SECOND: 'true' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const serve: Serve = { child, logs: [], url: '' };
  serves.push(serve);
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('serve did not start')), LIMIT_MS);
    const out = createLogLines(() => {
      const line = out.lines.find((l) => l.msg === 'local API and dashboard listening');
      if (line) {
        clearTimeout(timer);
        resolve(String(line.url));
      }
    });
    serve.logs = out.lines;
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => out.write(chunk));
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  serve.url = await listening;
  return serve;
}

beforeAll(async () => {
  redis = await startRedis();
  queueName = `executions-${randomUUID().slice(0, 8)}`;
  ticks = new Queue(schedulesQueueName(queueName), { connection: { url: redis.url }, prefix: 'bull' });
  events = await openQueueEvents(ticks, redis.url);
  await Promise.all([startServe(), startServe()]);
}, 120_000);

afterAll(async () => {
  await Promise.all(
    serves.map(async ({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }),
  );
  await Promise.allSettled([events?.close(), ticks?.close()]);
  await redis?.stop();
});

const call = (serve: Serve) => httpCall(serve.url, { 'X-Service-Key': KEY });

describe('two serve processes', () => {
  it('make exactly one execution per tick of a version scheduled every second, and stop when it is unpublished', async () => {
    const [a, b] = serves as [Serve, Serve];
    const created = await call(a)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], triggerType: 'schedule', scheduleExpression: '* * * * * *' });
    expect(created.status).toBe(201);
    const answered = answerAs(workflow, created);
    const workflowId = answered.workflow_uuid;

    // Six ticks, each awaited through the scheduler's own next job and BullMQ's events.
    for (let i = 0; i < 6; i += 1) {
      const next = (await ticks.getJobScheduler(workflowId))?.next;
      const tick = await Job.fromId(ticks, `repeat:${workflowId}:${next}`);
      await tick?.waitUntilFinished(events, LIMIT_MS);
    }
    const versionId = answered.current_version!.workflow_version_uuid;
    expect((await call(b)('POST', `/api/workflows/${workflowId}/versions/${versionId}/unpublish`)).status).toBe(200);
    expect(await ticks.getJobScheduler(workflowId)).toBeUndefined();
    const pending = await ticks.getJobs(['active', 'wait', 'delayed', 'prioritized'], 0, -1);
    await Promise.all(pending.map((j) => j.waitUntilFinished(events, LIMIT_MS).catch(() => undefined)));

    const done = (await ticks.getJobs(['completed', 'failed'], 0, -1)).filter((j) => j.id?.startsWith(`repeat:${workflowId}:`));
    expect(done.filter((j) => j.failedReason)).toEqual([]);
    const made = done.map((j) => (j.returnvalue as { executionId?: string }).executionId).filter((id): id is string => id !== undefined);
    expect(made.length).toBeGreaterThanOrEqual(6);
    expect(new Set(made).size).toBe(made.length);
    const executions = answerAs(executionList, await call(a)('GET', `/api/executions?workflow_uuid=${workflowId}&limit=200`)).items;
    expect(executions.map((e) => e.execution_uuid).sort()).toEqual([...made].sort());
    expect(executions.every((e) => e.trigger === 'schedule')).toBe(true);
    // Each execution was queued by exactly one of the two processes.
    const queuedBy = serves.flatMap((s) => s.logs.filter((l) => l.msg === 'execution queued' && l.trigger === 'schedule').map((l) => l.executionId));
    expect([...queuedBy].sort()).toEqual([...made].sort());

    expect((await call(b)('DELETE', `/api/workflows/${workflowId}`)).status).toBe(204);
    expect(await ticks.getJobSchedulersCount()).toBe(0);
  }, 180_000);
});
