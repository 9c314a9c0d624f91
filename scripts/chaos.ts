/**
 * `npm run chaos`: a fleet of worker daemons on one Redis (append-only file on) runs a few hundred
 * short executions while a driver SIGKILLs random workers, SIGTERMs others, starts replacements
 * (on the same WORK_DIR, so an outbox left behind is delivered) and restarts Redis once. Then it
 * checks that every execution was reported exactly once (completed, or `worker_lost` /
 * `worker_shutdown`: docs/queue-and-jobs.md#lost-executions), that none asked the model anything
 * after its report, and that no Chromium or ffmpeg of any worker is left. Prints the counts;
 * exits 1 when a check fails. Not part of the test suite: it takes minutes.
 *
 * CHAOS_WORKERS (4), CHAOS_CONCURRENCY (2), CHAOS_EXECUTIONS (300), CHAOS_MAX_SECONDS (1500),
 * CHAOS_VIDEO (true).
 */
import { stopAllDaemons, type DaemonProcess } from '../test/support/daemon-process.js';
import { startRedis } from '../test/support/redis.js';
import { browserAndEncoderPids, enqueueMarked, fleetCase, stillAlive, tally } from '../test/faults/fleet.js';
import { pollUntil, startRig } from '../test/faults/harness.js';

const WORKERS = Number(process.env.CHAOS_WORKERS ?? 4);
const CONCURRENCY = Number(process.env.CHAOS_CONCURRENCY ?? 2);
const EXECUTIONS = Number(process.env.CHAOS_EXECUTIONS ?? 300);
const MAX_SECONDS = Number(process.env.CHAOS_MAX_SECONDS ?? 1500);
const EXPECTED = new Set(['completed', 'worker_lost', 'worker_shutdown']);

const log = (message: string, fields: Record<string, unknown> = {}) => process.stdout.write(`${new Date().toISOString()} ${message} ${JSON.stringify(fields)}\n`);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

async function main(): Promise<number> {
  const rig = await startRig('chaos', { fleet: fleetCase() }, { redis: (dir) => startRedis({ appendOnlyDir: dir }) });
  const env = {
    WORKER_CONCURRENCY: String(CONCURRENCY),
    QUEUE_LOCK_DURATION_MS: '10000',
    QUEUE_STALLED_INTERVAL_MS: '2000',
    SHUTDOWN_GRACE_MS: '2000',
    VIDEO_ENABLED: process.env.CHAOS_VIDEO ?? 'true',
    LOG_LEVEL: 'warn',
  };
  const recorded = new Map<number, string>();
  const slots: DaemonProcess[] = [];
  const actions = { sigkill: 0, sigterm: 0, replacements: 0, redisRestarts: 0 };
  let generation = 0;
  const start = (slot: number) => rig.startWorker(`w${slot}-${generation++}`, `${rig.tmp}/work-${slot}`, { ...env, LOG_LEVEL: 'info' });
  const deadline = Date.now() + MAX_SECONDS * 1000;
  try {
    for (let slot = 0; slot < WORKERS; slot++) slots.push(await start(slot));
    const ids = await enqueueMarked(rig, EXECUTIONS);
    log('enqueued', { executions: EXECUTIONS, workers: WORKERS, concurrency: CONCURRENCY });
    const reported = () => ids.filter((id) => rig.api.calls.some((c) => c.method === 'POST' && /\/(completed|failed)$/.test(c.path) && c.path.includes(id))).length;

    // Faults until 90% are reported; then the fleet finishes in peace.
    while (reported() < EXECUTIONS * 0.9 && Date.now() < deadline) {
      await pause(2_000 + Math.random() * 4_000);
      for (const worker of slots) for (const [pid, name] of browserAndEncoderPids(worker)) recorded.set(pid, name);
      const done = reported();
      if (actions.redisRestarts === 0 && done >= EXECUTIONS / 2) {
        log('restarting redis', { reported: done });
        await rig.redis.restart!();
        actions.redisRestarts++;
        continue;
      }
      const slot = Math.floor(Math.random() * slots.length);
      const victim = slots[slot]!;
      const signal = pick(['SIGKILL', 'SIGTERM'] as const);
      log(`sending ${signal}`, { worker: victim.name, reported: done });
      victim.signal(signal);
      actions[signal === 'SIGKILL' ? 'sigkill' : 'sigterm']++;
      await victim.exited;
      slots[slot] = await start(slot);
      actions.replacements++;
    }

    while (reported() < EXECUTIONS && Date.now() < deadline) await pause(1_000);
    await pollUntil('the queue to be empty', async () => {
      const counts = await rig.queue.getJobCounts('waiting', 'active', 'delayed');
      return (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.delayed ?? 0) === 0 ? true : undefined;
    }, Math.max(1_000, deadline - Date.now()));
    for (const worker of slots) for (const [pid, name] of browserAndEncoderPids(worker)) recorded.set(pid, name);
    for (const worker of slots) worker.signal('SIGTERM');
    await Promise.all(slots.map((w) => w.exited));
    let orphans: number[] = [];
    try {
      await pollUntil('no Chromium or ffmpeg left', () => ((orphans = stillAlive(recorded)).length === 0 ? true : undefined), 30_000);
    } catch {
      // Reported below.
    }

    const result = tally(rig, ids);
    const unexpected = Object.keys(result.outcomes).filter((o) => !EXPECTED.has(o));
    const summary = {
      executions: EXECUTIONS,
      ...result.outcomes,
      missing: result.missing.length,
      reportedTwice: result.reportedTwice.length,
      startedTwice: result.startedTwice.length,
      ranAfterEnd: result.ranAfterEnd.length,
      unexpectedOutcomes: unexpected,
      browserAndEncoderProcessesSeen: recorded.size,
      orphans: orphans.length,
      ...actions,
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    const ok = result.missing.length + result.reportedTwice.length + result.startedTwice.length + result.ranAfterEnd.length + unexpected.length + orphans.length === 0;
    process.stdout.write(ok ? 'chaos: every execution reported exactly once, nothing left behind\n' : 'chaos: FAILED\n');
    return ok ? 0 : 1;
  } finally {
    await stopAllDaemons();
    await rig.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`chaos: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
