import { toExecutionError, type ExecutionError } from '../contract/errors.js';
import { parseJobData, readableExecutionId } from '../domain/job.js';
import { noTracing } from '../telemetry/tracing.js';
import type { Logger } from '../telemetry/types.js';
import { announce } from './announce.js';
import { runBrowserPhase } from './browser-phase.js';
import { notRun, openExecution } from './execution.js';
import { endExecutionTrace, inPhase, openExecutionTrace, traceExecutionEvents, type ExecutionTrace } from './execution-trace.js';
import { finalise } from './finalise.js';
import { prepare } from './prepare.js';
import { Scope } from './scope.js';
import type { ExecutionSummary, RunnerDeps } from './types.js';
import type { JobData } from '../contract/job.js';

/**
 * Runs one execution from raw job data to its final report, as phases, each taking what the one
 * before returned: prepare (resolve, validate, load the profile, stage input files) → announce
 * (`started`) → the browser phase (session, video, live view, human gate, agent or replay) →
 * finalise (artifacts, report). A failure before the browser goes straight to finalise. One
 * scope holds what the execution opened (the process log's scrub, the scratch folder, logs.jsonl,
 * the live channel) and closes it, in reverse, on every path. The execution is one trace: its root
 * span is active throughout, each phase a span of its own (execution-trace.ts).
 */
export async function runExecution(deps: RunnerDeps, rawJob: unknown, outerSignal: AbortSignal): Promise<ExecutionSummary> {
  const { job, invalid } = readJob(rawJob);
  const log = deps.logger.child({ executionId: job.executionId });
  const tracing = deps.tracing ?? noTracing;
  const trace = openExecutionTrace(tracing, job);
  try {
    return await tracing.withSpan(trace.root, () => runPhases(deps, job, invalid, outerSignal, log, trace, rawJob));
  } catch (error) {
    const failed = toExecutionError(error);
    trace.root.fail(failed.code, failed.message);
    throw error;
  } finally {
    trace.root.end();
  }
}

async function runPhases(deps: RunnerDeps, job: JobData, invalid: ExecutionError | undefined, outerSignal: AbortSignal, log: Logger, trace: ExecutionTrace, rawJob: unknown): Promise<ExecutionSummary> {
  const scope = new Scope((error, step) => log.warn({ err: error, step }, 'the execution could not close a resource'));
  if (droppedTraceParent(rawJob, job)) log.warn({}, "the job's traceparent is not a W3C traceparent: the execution starts a trace of its own");
  try {
    const ctx = await openExecution(deps, job, outerSignal, log, scope);
    if (trace.tracing.enabled) scope.defer('trace', traceExecutionEvents(trace, ctx.events, ctx.now));
    const summary = await phases();
    // Said while the run's secrets are still known to the redaction (the scope forgets them).
    endExecutionTrace(trace, summary);
    return summary;

    async function phases(): Promise<ExecutionSummary> {
      const final = (run: Parameters<typeof finalise>[1]) => inPhase(trace, 'finalise', () => finalise(ctx, run));
      if (invalid) {
        ctx.events.emit('execution_failed_validation', { code: invalid.code, message: invalid.message });
        return final(notRun(ctx, invalid));
      }
      ctx.events.emit('execution_received', { workflowId: job.workflowId, workflowVersionId: job.workflowVersionId });
      const prepared = await inPhase(trace, 'prepare', () => prepare(ctx), (result) => (result.ok ? undefined : result.error));
      if (!prepared.ok) return final(notRun(ctx, prepared.error, prepared.profile && { ...prepared.profile.report }));
      const plan = prepared.value;
      const announced = await inPhase(trace, 'announce', () => announce(ctx, plan), (result) => (result.status === 'failed' ? result.error : undefined));
      // Skipped: nothing is kept or reported (the scope removes the scratch folder).
      if (announced.status === 'skipped') return { status: 'skipped', executionId: job.executionId, reason: announced.reason };
      if (announced.status === 'failed') return final(notRun(ctx, announced.error, plan.profile && { ...plan.profile.report }));
      const ended = await inPhase(trace, 'browser_phase', () => runBrowserPhase(ctx, plan, announced.startedAtMs), (run) => (run.outcome.status === 'failed' ? run.outcome : undefined));
      return final(ended);
    }
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

/** A job that sent a `traceparent` the job's reading dropped: it is not one (docs/queue-and-jobs.md#job-data). */
function droppedTraceParent(rawJob: unknown, job: JobData): boolean {
  const sent = rawJob !== null && typeof rawJob === 'object' ? (rawJob as { traceparent?: unknown }).traceparent : undefined;
  return typeof sent === 'string' && job.traceparent === undefined;
}
