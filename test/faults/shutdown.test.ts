import { stat } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnDaemon, stopAllDaemons } from '../support/daemon-process.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from './harness.js';

/**
 * SIGTERM with runs in flight (docs/operations.md#signals-and-shutdown): no new job is taken; a run that ends within
 * SHUTDOWN_GRACE_MS is reported as it ended; one that does not is stopped, its recording
 * finalised and uploaded, and reported `worker_shutdown`; the process exits 0. A second signal
 * cuts the grace short. A signal while the daemon is still starting stops it once started.
 */

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('shutdown', {
    // Still working (a 2 s wait in the browser) when SIGTERM comes, done well within the grace.
    short: (turn) => (turn === 0 ? browser('wait', { duration: 2 }) : finish('completed', { done: 'short' })),
    long: () => ({ hang: true }),
    endless: () => ({ hang: true }),
    late: () => finish('completed', { done: 'late' }),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

describe('graceful shutdown', () => {
  it('lets a short run finish, stops a long one with worker_shutdown and its artifacts, and exits 0', async () => {
    const worker = await rig.startWorker('draining', `${rig.tmp}/work-a`, { SHUTDOWN_GRACE_MS: '8000', WORKER_CONCURRENCY: '2' });
    const short = await rig.enqueue('short');
    const long = await rig.enqueue('long');
    await Promise.all([rig.waitForRequest('short'), rig.waitForRequest('long')]);

    worker.signal('SIGTERM');
    await worker.waitForLog('daemon draining');
    // Taken by nobody while this worker drains.
    const late = await rig.enqueue('late');

    const [shortReport, longReport] = await Promise.all([rig.api.waitForFinal(short), rig.api.waitForFinal(long)]);
    expect(shortReport.path).toMatch(/\/completed$/);
    expect(shortReport.body).toMatchObject({ nSteps: 2, nAgentActions: 1 });
    expect(longReport.path).toMatch(/\/failed$/);
    const longBody = longReport.body as Record<string, unknown>;
    expect(longBody).toMatchObject({ error: { code: 'worker_shutdown' } });
    for (const field of ['videoUrl', 'logsUrl', 'outputUrl'] as const) {
      expect(longBody[field], field).toMatch(/^file:\/\//);
      expect((await stat(fileURLToPath(longBody[field] as string))).size, field).toBeGreaterThan(0);
    }
    expect(longBody.durationMs).toBeGreaterThan(0);

    expect(await worker.exited, worker.tail()).toEqual({ code: 0, signal: null });
    const states = worker.logs.filter((l) => typeof l.to === 'string' && /^daemon /.test(l.msg)).map((l) => l.to);
    expect(states).toEqual(['starting', 'running', 'draining', 'stopped']);
    expect(worker.find('grace period over: stopping running executions')).toHaveLength(1);

    for (const id of [short, long]) {
      expect(callsOf(rig.api, id).started).toHaveLength(1);
      onlyFinal(rig.api, id);
    }
    expect(callsOf(rig.api, late).started).toHaveLength(0);
    expect(await (await rig.queue.getJob(late))!.getState()).toBe('waiting');
    expect(rig.requestsOf('late')).toHaveLength(0);
    await (await rig.queue.getJob(late))!.remove();
  });

  it('cuts the grace short on a second signal', async () => {
    // A grace far beyond the test's timeout: only the second signal can end this in time.
    const worker = await rig.startWorker('impatient', `${rig.tmp}/work-b`, { SHUTDOWN_GRACE_MS: '3600000', WORKER_CONCURRENCY: '1', VIDEO_ENABLED: 'false' });
    const endless = await rig.enqueue('endless');
    await rig.waitForRequest('endless');

    worker.signal('SIGTERM');
    await worker.waitForLog('taking no new job; waiting for running executions');
    worker.signal('SIGTERM');
    await worker.waitForLog('second stop request: cutting the grace period short');

    const report = await rig.api.waitForFinal(endless);
    expect(report.path).toMatch(/\/failed$/);
    expect(report.body).toMatchObject({ error: { code: 'worker_shutdown' } });
    expect(await worker.exited, worker.tail()).toEqual({ code: 0, signal: null });
    expect(worker.find('daemon stopped')).toHaveLength(1);
    expect(callsOf(rig.api, endless).started).toHaveLength(1);
    onlyFinal(rig.api, endless);
  });

  it('stops gracefully, once started, when SIGTERM comes while it is still starting', async () => {
    // Redis behind a gate: the daemon's start waits for its queue connection until the gate opens.
    const gate = await startGate(new URL(rig.redis.url));
    try {
      const worker = spawnDaemon('early', { ...rig.workerEnv(`${rig.tmp}/work-c`), REDIS_URL: gate.url, VIDEO_ENABLED: 'false' });
      await worker.waitForLog('connecting to the queue');
      expect(worker.find('daemon running')).toHaveLength(0);
      worker.signal('SIGTERM');
      await worker.waitForLog('stop requested while starting: stopping once started');
      gate.open();
      expect(await worker.exited, worker.tail()).toEqual({ code: 0, signal: null });
      const states = worker.logs.filter((l) => /^daemon /.test(l.msg)).map((l) => l.msg);
      expect(states).toEqual(['daemon starting', 'daemon running', 'daemon draining', 'daemon stopped']);
    } finally {
      await gate.close();
    }
  });
});

/** A TCP relay to Redis that holds every connection until `open()`. */
async function startGate(target: URL): Promise<{ url: string; open(): void; close(): Promise<void> }> {
  const held: Socket[] = [];
  const sockets = new Set<Socket>();
  let isOpen = false;
  const relay = (client: Socket) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  };
  const server = createServer((client) => {
    if (isOpen) relay(client);
    else {
      client.pause();
      held.push(client);
      sockets.add(client);
      client.on('error', () => client.destroy());
      client.on('close', () => sockets.delete(client));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    open() {
      isOpen = true;
      for (const client of held.splice(0)) {
        relay(client);
        client.resume();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
