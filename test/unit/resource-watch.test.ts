import fc from 'fast-check';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isExecutionError, type ExecutionError } from '../../src/contract/errors.js';
import { createExecutionEvents } from '../../src/execution/events.js';
import { folderBytes, sizeText, watchResources } from '../../src/runner/resource-watch.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';

const dirs: string[] = [];
const scratch = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'resource-watch-'));
  dirs.push(dir);
  return dir;
};
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

function rig() {
  const events = createExecutionEvents({ executionId: 'x', redact: (v) => v });
  const reached: unknown[] = [];
  events.on('resource_limit_reached', (fields) => reached.push(fields));
  let end!: (reason: ExecutionError) => void;
  const ended = new Promise<ExecutionError>((resolve) => (end = resolve));
  return { events, reached, ended, end: (reason: ExecutionError) => end(reason), log: createSilentLogger() };
}

describe('watchResources', () => {
  it('ends the execution with resource_limit once its pages hold more than BROWSER_MEMORY_MAX_BYTES, and says so once', async () => {
    const r = rig();
    const held = [10, 20, 900, 2000];
    let reads = 0;
    const watch = watchResources({ memory: { maxBytes: 500, read: async () => held[Math.min(reads++, held.length - 1)]! }, events: r.events, log: r.log, end: r.end, intervalMs: 5 });
    const reason = await r.ended;
    watch.stop();
    expect(isExecutionError(reason) && reason.code).toBe('resource_limit');
    expect(reason.message).toContain('BROWSER_MEMORY_MAX_BYTES');
    expect(r.reached).toEqual([{ limit: 'BROWSER_MEMORY_MAX_BYTES', max: 500, value: 900, unit: 'bytes', action: 'ended', detail: expect.stringContaining('900') }]);
    // Stopped at the first reach: no sample after it.
    expect(reads).toBe(3);
  });

  it('says what was held and the ceiling in units a person reads, the exact counts kept', async () => {
    const r = rig();
    const watch = watchResources({ memory: { maxBytes: 2 * 1024 ** 3, read: async () => 2_300_000_000 }, events: r.events, log: r.log, end: r.end, intervalMs: 5 });
    const reason = await r.ended;
    watch.stop();
    expect(reason.message).toBe("the execution's browser's pages held 2.1 GiB (2300000000 bytes), past BROWSER_MEMORY_MAX_BYTES of 2.0 GiB (2147483648 bytes)");
    expect(sizeText(999)).toBe('999 bytes');
    expect(sizeText(1_572_864)).toBe('1.5 MiB (1572864 bytes)');
  });

  it('ends it once its scratch folder holds more than SCRATCH_DISK_MAX_BYTES, leaving the input files out', async () => {
    const dir = await scratch();
    await mkdir(path.join(dir, 'inputs'));
    await writeFile(path.join(dir, 'inputs', 'big.bin'), Buffer.alloc(5000));
    const r = rig();
    const watch = watchResources({ disk: { maxBytes: 1000, dir, skip: ['inputs'] }, events: r.events, log: r.log, end: r.end, intervalMs: 5 });
    // Under the ceiling with its inputs of 5000 bytes: the watch samples and lets it run.
    await writeFile(path.join(dir, 'logs.jsonl'), Buffer.alloc(600));
    await mkdir(path.join(dir, 'downloads'));
    // Written aside and moved in whole, so that a sample sees it all or not at all.
    await writeFile(path.join(dir, 'inputs', 'a.part'), Buffer.alloc(600));
    await rename(path.join(dir, 'inputs', 'a.part'), path.join(dir, 'downloads', 'a.bin'));
    const reason = await r.ended;
    watch.stop();
    expect(reason.code).toBe('resource_limit');
    expect(r.reached).toMatchObject([{ limit: 'SCRATCH_DISK_MAX_BYTES', max: 1000, value: 1200, action: 'ended' }]);
  });

  it('measures nothing when both ceilings are 0 (off)', async () => {
    const r = rig();
    let reads = 0;
    const watch = watchResources({ memory: { maxBytes: 0, read: async () => (reads++, 1e12) }, disk: { maxBytes: 0, dir: '/' }, events: r.events, log: r.log, end: r.end, intervalMs: 1 });
    // Waits on the stream for a line that would follow a sample: none comes in this many turns.
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    watch.stop();
    expect(reads).toBe(0);
    expect(r.reached).toEqual([]);
  });

  it('after stop() samples no more and ends nothing', async () => {
    const r = rig();
    let reads = 0;
    let release!: () => void;
    const firstRead = new Promise<void>((resolve) => (release = resolve));
    const watch = watchResources({
      memory: {
        maxBytes: 100,
        read: async () => {
          reads++;
          watch.stop();
          release();
          return 1_000;
        },
      },
      events: r.events,
      log: r.log,
      end: r.end,
      intervalMs: 1,
    });
    await firstRead;
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect(reads).toBe(1);
    // The sample that was already running when the run ended reports nothing.
    expect(r.reached).toEqual([]);
  });
});

describe('folderBytes', () => {
  it('is the sum of the sizes of every file below the folder, whatever the tree', async () => {
    const tree = fc.array(fc.record({ at: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 }), size: fc.nat(4096) }), { maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(tree, async (files) => {
        const dir = await scratch();
        let expected = 0;
        for (const [i, file] of files.entries()) {
          const folder = path.join(dir, ...file.at.map((part) => `d${part}`));
          await mkdir(folder, { recursive: true });
          await writeFile(path.join(folder, `f${i}`), Buffer.alloc(file.size));
          expected += file.size;
        }
        expect(await folderBytes(dir, new Set(), AbortSignal.timeout(30_000))).toBe(expected);
      }),
      { numRuns: 30 },
    );
  });
});
