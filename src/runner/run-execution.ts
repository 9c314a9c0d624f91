import { toExecutionError, type ExecutionError } from '../domain/errors.js';
import { parseJobData, readableExecutionId, type JobData } from '../domain/job.js';
import { announce } from './announce.js';
import { runBrowserPhase } from './browser-phase.js';
import { notRun, openExecution } from './execution.js';
import { finalise } from './finalise.js';
import { prepare } from './prepare.js';
import { Scope } from './scope.js';
import type { ExecutionSummary, RunnerDeps } from './types.js';

/**
 * Runs one execution from raw job data to its final report, as phases, each taking what the one
 * before returned: prepare (resolve, validate, load the profile, stage input files) → announce
 * (`started`) → the browser phase (session, video, live view, human gate, agent or replay) →
 * finalise (artifacts, report). A failure before the browser goes straight to finalise. One
 * scope holds what the execution opened (the process log's scrub, the scratch folder, logs.jsonl,
 * the live channel) and closes it, in reverse, on every path.
 */
export async function runExecution(deps: RunnerDeps, rawJob: unknown, outerSignal: AbortSignal): Promise<ExecutionSummary> {
  const { job, invalid } = readJob(rawJob);
  const log = deps.logger.child({ executionId: job.executionId });
  const scope = new Scope((error, step) => log.warn({ err: error, step }, 'the execution could not close a resource'));
  try {
    const ctx = await openExecution(deps, job, outerSignal, log, scope);
    if (invalid) {
      ctx.events.emit('execution_failed_validation', { code: invalid.code, message: invalid.message });
      return await finalise(ctx, notRun(ctx, invalid));
    }
    ctx.events.emit('execution_received', { workflowId: job.workflowId, workflowVersionId: job.workflowVersionId });
    const prepared = await prepare(ctx);
    if (!prepared.ok) return await finalise(ctx, notRun(ctx, prepared.error, prepared.profile && { ...prepared.profile.report }));
    const plan = prepared.value;
    const announced = await announce(ctx, plan);
    // Skipped: nothing is kept or reported (the scope removes the scratch folder).
    if (announced.status === 'skipped') return { status: 'skipped', executionId: job.executionId, reason: announced.reason };
    if (announced.status === 'failed') return await finalise(ctx, notRun(ctx, announced.error, plan.profile && { ...plan.profile.report }));
    return await finalise(ctx, await runBrowserPhase(ctx, plan, announced.startedAtMs));
  } finally {
    await scope.close();
  }
}

/** The job, or, when it is malformed but its execution id readable, that id and why (reported as failed). */
function readJob(rawJob: unknown): { job: JobData; invalid?: ExecutionError } {
  try {
    return { job: parseJobData(rawJob) };
  } catch (error) {
    const executionId = readableExecutionId(rawJob);
    // Without a readable id there is nobody to report to: the caller fails the job.
    if (!executionId) throw error;
    return { job: { executionId }, invalid: toExecutionError(error, 'invalid_job') };
  }
}
