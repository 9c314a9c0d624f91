import { readdir, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createOutbox } from '../../src/control-plane/outbox.js';
import type { ControlPlane } from '../../src/control-plane/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';
import type { CompletedReport } from '../../src/contract/reports.js';

const report: CompletedReport = { completedAt: '2026-01-01T00:00:00.000Z', durationMs: 5, nSteps: 1, nAgentActions: 1, nScreenshots: 2, outputUrl: null, videoUrl: null, logsUrl: null };

function fakeApi(failures: number, failWith: () => Error = () => new Error('ECONNREFUSED')) {
  const delivered: string[] = [];
  let left = failures;
  const api: ControlPlane = {
    getExecution: async () => ({ execution_uuid: 'x' }),
    listVersions: async () => [],
    markStarted: async () => ({ ok: true }),
    markWaiting: async () => undefined,
    markResumed: async () => undefined,
    reportCompleted: async (id) => {
      if (left-- > 0) throw failWith();
      delivered.push(`completed:${id}`);
    },
    reportFailed: async (id) => {
      if (left-- > 0) throw failWith();
      delivered.push(`failed:${id}`);
    },
  };
  return { api, delivered };
}

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('final-report outbox', () => {
  it('stores a report, delivers it in the background through failures, then forgets it', async () => {
    const dir = await tempDir('outbox');
    dirs.push(dir);
    const { api, delivered } = fakeApi(2);
    const outbox = createOutbox({ dir, inner: api, logger: createSilentLogger(), retryEveryMs: 5 });
    await outbox.reportCompleted('e1', report);
    expect(outbox.depth()).toBe(1);
    expect(await outbox.drain(5_000)).toBe(true);
    expect(delivered).toEqual(['completed:e1']);
    expect(await readdir(dir)).toEqual([]);
    await outbox.close();
  });

  it('has forgotten a report (depth 0, file gone) by the time it logs "final report delivered"', async () => {
    const dir = await tempDir('outbox');
    dirs.push(dir);
    const { api } = fakeApi(0);
    const seen: { depth: number; files: Promise<string[]> }[] = [];
    const logger = { ...createSilentLogger() };
    logger.info = (_fields, msg) => {
      if (msg === 'final report delivered') seen.push({ depth: outbox.depth(), files: readdir(dir) });
    };
    const outbox = createOutbox({ dir, inner: api, logger, retryEveryMs: 5 });
    await outbox.reportCompleted('e4', report);
    expect(await outbox.drain(5_000)).toBe(true);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.depth).toBe(0);
    expect(await seen[0]!.files).toEqual([]);
    await outbox.close();
  });

  it('keeps undelivered reports on disk across a restart and delivers them once after it', async () => {
    const dir = await tempDir('outbox');
    dirs.push(dir);
    const down = fakeApi(Number.POSITIVE_INFINITY);
    const first = createOutbox({ dir, inner: down.api, logger: createSilentLogger(), retryEveryMs: 60_000 });
    await first.reportFailed('e2', { ...report, failedAt: report.completedAt, error: { code: 'timeout', message: 'slow' } });
    await first.close();
    expect(await readdir(dir)).toHaveLength(1);

    const up = fakeApi(0);
    const second = createOutbox({ dir, inner: up.api, logger: createSilentLogger() });
    await second.resume();
    expect(await second.drain(5_000)).toBe(true);
    expect(up.delivered).toEqual(['failed:e2']);
    expect(await readdir(dir)).toEqual([]);
    await second.close();
  });

  it('drops a report the API refuses for good (409), without sending it again', async () => {
    const dir = await tempDir('outbox');
    dirs.push(dir);
    const refused = Object.assign(new Error('409 already ended'), { status: 409 });
    const { api, delivered } = fakeApi(1, () => refused);
    const outbox = createOutbox({ dir, inner: api, logger: createSilentLogger(), retryEveryMs: 5 });
    await outbox.reportCompleted('e3', report);
    expect(await outbox.drain(5_000)).toBe(true);
    expect(delivered).toEqual([]);
    expect(await readdir(dir)).toEqual([]);
    await outbox.close();
  });
});
