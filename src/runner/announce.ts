import { errorFromSignal, toExecutionError, type ExecutionError } from '../contract/errors.js';
import type { ExecutionContext } from './execution.js';
import type { Prepared } from './prepare.js';

export type Announced =
  | { status: 'started'; startedAtMs: number }
  /** The API said the execution is no longer runnable (404/409): it is not run, nothing is kept. */
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; error: ExecutionError };

/**
 * The announce phase: tells the API the run starts (docs/api.md), or, without an API (`run`),
 * starts the clock. The run's timeline (`t` of logs.jsonl, the video) counts from here.
 */
export async function announce(ctx: ExecutionContext, plan: Prepared): Promise<Announced> {
  const { deps, job, events, outerSignal: signal } = ctx;
  let startedAtMs = ctx.now();
  if (deps.controlPlane) {
    const startedAt = new Date(startedAtMs);
    let started;
    try {
      started = await deps.controlPlane.markStarted(job.executionId, startedAt.toISOString(), signal);
    } catch (error) {
      // The API could not be told: do not act on the business system unannounced.
      const failed = signal.aborted ? errorFromSignal(signal) : toExecutionError(error);
      events.emit('error', { phase: 'started', code: failed.code, message: failed.message });
      return { status: 'failed', error: failed };
    }
    if (!started.ok) {
      ctx.log.warn({ status: started.status, reason: started.reason }, 'execution is no longer runnable; not running it');
      events.emit('execution_skipped', { status: started.status, reason: started.reason });
      return { status: 'skipped', reason: started.reason };
    }
    startedAtMs = startedAt.getTime();
  }
  events.setOrigin(startedAtMs);
  const { choice } = plan;
  events.emit('execution_started', { startUrl: plan.startUrl, model: plan.modelId, toolset: choice.kind, computerTool: choice.kind === 'computer' ? choice.computer.type : undefined });
  return { status: 'started', startedAtMs };
}
