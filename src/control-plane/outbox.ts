import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatIssues } from '../contract/json.js';
import { outboxEntry, type OutboxEntry as Entry } from '../contract/reports.js';
import type { Logger } from '../telemetry/types.js';
import { sleep } from './retry.js';
import type { ControlPlane } from './types.js';

/**
 * A durable outbox for final reports (docs/api.md: never dropped silently). A report is
 * written to disk before it is sent and removed once the API took it, so a worker restart
 * while the API is down loses nothing: the next start sends what is left.
 *
 * `reportCompleted`/`reportFailed` resolve once the report is stored, not when it is
 * delivered; delivery goes on in the background, retried with the client's backoff and then
 * again every `retryEveryMs`, until the API answers. A refusal that is final (4xx, e.g. 409
 * "already ended") removes it too: the API has decided, and sending again cannot change that.
 */
export interface Outbox extends ControlPlane {
  /** Reports stored and not yet delivered. */
  depth(): number;
  /** Sends whatever an earlier process left behind; call once at start. */
  resume(): Promise<void>;
  /** Resolves when nothing is pending, or after `timeoutMs`; true when empty. */
  drain(timeoutMs: number): Promise<boolean>;
  /** Stops delivery attempts; pending reports stay on disk for the next start. */
  close(): Promise<void>;
}

export function createOutbox(options: {
  dir: string;
  inner: ControlPlane;
  logger: Logger;
  /** Pause between delivery rounds once the client's own retries gave up. */
  retryEveryMs?: number;
  /** Whether an error means the API refused for good (do not send again). */
  isFinalRefusal?: (error: unknown) => boolean;
}): Outbox {
  const { inner, logger } = options;
  const retryEveryMs = options.retryEveryMs ?? 30_000;
  const isFinalRefusal = options.isFinalRefusal ?? defaultFinalRefusal;
  const pending = new Map<string, Promise<void>>();
  const waiters = new Set<() => void>();
  const stop = new AbortController();
  let ready: Promise<void> | undefined;

  const fileOf = (executionId: string, kind: Entry['kind']) => path.join(options.dir, `${encodeURIComponent(executionId)}.${kind}.json`);
  const ensureDir = () => (ready ??= mkdir(options.dir, { recursive: true }).then(() => undefined));

  async function store(entry: Entry): Promise<void> {
    await ensureDir();
    const file = fileOf(entry.executionId, entry.kind);
    // Write then rename: a crash leaves the old file or the new one, never half of one.
    await writeFile(`${file}.tmp`, JSON.stringify(entry));
    await rename(`${file}.tmp`, file);
    deliverInBackground(entry, file);
  }

  function deliverInBackground(entry: Entry, file: string): void {
    if (pending.has(file)) return;
    const who = { executionId: entry.executionId, kind: entry.kind };
    const run = (async () => {
      const outcome = await deliver(entry);
      if (outcome.kind === 'closed') return;
      // Removed from disk and from the count before anyone is told: whoever reads the log line
      // "delivered" and then asks for the depth sees the report gone.
      await rm(file, { force: true });
      pending.delete(file);
      if (outcome.kind === 'delivered') logger.info({ ...who, round: outcome.round }, 'final report delivered');
      else logger.error({ ...who, err: String(outcome.error) }, 'final report refused by the API; not sending it again');
    })().finally(() => {
      pending.delete(file);
      if (pending.size === 0) for (const wake of waiters) wake();
    });
    pending.set(file, run);
  }

  type Outcome = { kind: 'delivered'; round: number } | { kind: 'refused'; error: unknown } | { kind: 'closed' };

  async function deliver(entry: Entry): Promise<Outcome> {
    for (let round = 1; !stop.signal.aborted; round++) {
      try {
        if (entry.kind === 'completed') await inner.reportCompleted(entry.executionId, entry.report, stop.signal);
        else await inner.reportFailed(entry.executionId, entry.report, stop.signal);
        return { kind: 'delivered', round };
      } catch (error) {
        if (stop.signal.aborted) break;
        if (isFinalRefusal(error)) return { kind: 'refused', error };
        logger.error({ executionId: entry.executionId, kind: entry.kind, round, err: String(error), retryInMs: retryEveryMs }, 'final report not delivered yet; kept in the outbox');
        // Ends early, rejecting, when the outbox closes: the loop then stops (its condition reads the signal).
        await sleep(retryEveryMs, stop.signal).catch(() => undefined);
      }
    }
    return { kind: 'closed' };
  }

  return {
    getExecution: (id, signal) => inner.getExecution(id, signal),
    listVersions: (id, signal) => inner.listVersions(id, signal),
    markStarted: (id, at, signal) => inner.markStarted(id, at, signal),
    markWaiting: (id, report, signal) => inner.markWaiting(id, report, signal),
    markResumed: (id, report, signal) => inner.markResumed(id, report, signal),
    reportCompleted: (executionId, report) => store({ kind: 'completed', executionId, report, storedAt: new Date().toISOString() }),
    reportFailed: (executionId, report) => store({ kind: 'failed', executionId, report, storedAt: new Date().toISOString() }),
    depth: () => pending.size,
    async resume() {
      await ensureDir();
      for (const name of await readdir(options.dir)) {
        if (!name.endsWith('.json')) continue;
        const file = path.join(options.dir, name);
        try {
          const read = outboxEntry.safeParse(JSON.parse(await readFile(file, 'utf8')));
          if (!read.success) throw new Error(`not an outbox entry: ${formatIssues(read.error.issues)}`);
          const entry = read.data;
          logger.warn({ executionId: entry.executionId, kind: entry.kind, storedAt: entry.storedAt }, 'delivering a final report left by an earlier run');
          deliverInBackground(entry, file);
        } catch (error) {
          logger.error({ file, err: String(error) }, 'unreadable outbox entry left in place');
        }
      }
    },
    drain(timeoutMs) {
      if (pending.size === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          resolve(pending.size === 0);
        };
        const timer = setTimeout(done, timeoutMs);
        waiters.add(done);
      });
    },
    async close() {
      stop.abort(new Error('outbox closed'));
      await Promise.allSettled([...pending.values()]);
    },
  };
}

function defaultFinalRefusal(error: unknown): boolean {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 429;
}
