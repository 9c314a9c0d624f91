import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { tempDir } from '../support/env.js';
import { makeTestCertificates, startSentinelSet, type SentinelSet, type TestCertificates } from '../support/redis-sentinel.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from './harness.js';

/**
 * The worker on Redis Sentinel (`REDIS_URL=redis+sentinel://…`): a real primary, replica and
 * sentinel. The primary fails over while an execution runs: the run goes on, is reported once,
 * is not run again by anyone, and the worker takes new work from the promoted primary. The same
 * over TLS (`rediss+sentinel://`): every server listens over TLS only, with a test CA the worker
 * trusts through `NODE_EXTRA_CA_CERTS`.
 */

afterEach(stopAllDaemons);

for (const mode of ['plain', 'tls'] as const) {
  describe(`a Redis Sentinel fail-over mid-run (${mode === 'tls' ? 'rediss+sentinel://, TLS only' : 'redis+sentinel://'})`, () => {
    let rig: FaultRig;
    let sentinels: SentinelSet;
    let certs: TestCertificates | undefined;
    let certDir: string | undefined;

    beforeAll(async () => {
      if (mode === 'tls') {
        certDir = await tempDir('sentinel-certs');
        certs = await makeTestCertificates(certDir);
      }
      rig = await startRig(
        `sentinel-${mode}`,
        {
          // A 6 s wait in the browser: the fail-over happens during it.
          across: (turn) => (turn === 0 ? browser('wait', { duration: 6 }) : finish('completed', { across: true })),
          after: () => finish('completed', { after: true }),
        },
        {
          redis: async (dir) => {
            sentinels = await startSentinelSet(dir, certs ? { tls: certs } : {});
            return { url: sentinels.url, port: 0, stop: () => sentinels.stop() };
          },
          ...(certs ? { clientOptions: { tls: { ca: certs.ca }, sentinelTLS: { ca: certs.ca } } } : {}),
        },
      );
    });
    afterAll(async () => {
      await rig?.close();
      if (certDir) await rm(certDir, { recursive: true, force: true });
    });

    it('keeps the run, reports it exactly once, and the worker serves from the new primary', async () => {
      const worker = await rig.startWorker(`sentinel-worker-${mode}`, `${rig.tmp}/work`, {
        QUEUE_LOCK_DURATION_MS: '8000',
        QUEUE_STALLED_INTERVAL_MS: '2000',
        WORKER_CONCURRENCY: '1',
        VIDEO_ENABLED: 'false',
        ...(certs ? { NODE_EXTRA_CA_CERTS: certs.caFile } : {}),
      });
      const scheme = mode === 'tls' ? 'rediss' : 'redis';
      expect(worker.find('connecting to the queue')[0]).toMatchObject({ redis: expect.stringMatching(new RegExp(`^${scheme}\\+sentinel://127\\.0\\.0\\.1:\\d+/workerprimary/0$`)) });

      const across = await rig.enqueue('across');
      await rig.waitForRequest('across', 1); // the run is in its 6 s wait
      const before = await sentinels.primaryPort();
      const after = await sentinels.failover();
      expect(after).not.toBe(before);

      const report = await rig.api.waitForFinal(across);
      expect(report.path).toMatch(/\/completed$/);
      expect(report.body).toMatchObject({ nSteps: 2, nAgentActions: 1 });
      expect(worker.find('job lock lost: stopping the run')).toHaveLength(0);

      // New work is taken from the promoted primary.
      const later = await rig.enqueue('after');
      expect((await rig.api.waitForFinal(later)).path).toMatch(/\/completed$/);
      for (const id of [across, later]) {
        expect(callsOf(rig.api, id).started).toHaveLength(1);
        expect(onlyFinal(rig.api, id).kind).toBe('completed');
      }
      expect(rig.requestsOf('across')).toHaveLength(2);
      // The queue, read through the sentinel, agrees: both jobs completed, none waits to run again.
      await worker.waitForLog((l) => l.msg === 'final report delivered' && l.executionId === later);
      const counts = await rig.queue.getJobCounts('completed', 'waiting', 'active', 'failed');
      expect(counts).toMatchObject({ waiting: 0, failed: 0 });
    });
  });
}
