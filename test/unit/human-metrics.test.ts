import { describe, expect, it } from 'vitest';
import { answerOutcome } from '../../src/domain/human-protocol.js';
import { createExecutionEvents, type ExecutionEvents } from '../../src/execution/events.js';
import { createMetrics } from '../../src/telemetry/metrics.js';

/** The metrics of runs waiting for a person (docs/operations.md#health-and-metrics), fed by execution events. */

/** A series' value; `name` may be a histogram's `_sum` or `_count`. */
async function value(metrics: ReturnType<typeof createMetrics>, name: string, labels: Record<string, string> = {}): Promise<number> {
  const family = name.replace(/_(sum|count)$/, '');
  const metric = metrics.registry.getSingleMetric(name) ?? metrics.registry.getSingleMetric(family);
  if (!metric) throw new Error(`no metric ${name}`);
  const found = (await metric.get()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l) && ((v as { metricName?: string }).metricName ?? name) === name);
  return found?.value ?? 0;
}

/** The event streams of executions `ids`, each watched by `metrics` as the daemon wires it. */
function watched(metrics: ReturnType<typeof createMetrics>, ...ids: string[]) {
  return ids.map((id) => {
    const events = createExecutionEvents({ executionId: id, redact: (v) => v });
    metrics.watch(events, id);
    return events;
  });
}

const waiting = (kind: ExecutionEvents['waiting']['kind']): ExecutionEvents['waiting'] => ({ kind, question: 'May I?', choices: null, timeoutAt: '2026-01-01T00:00:00.000Z' });
const usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

describe('metrics of runs waiting for a person', () => {
  it('counts each waiting execution once, until its answer, its timeout or its end', async () => {
    const metrics = createMetrics();
    const [a, b, c] = watched(metrics, 'a', 'b', 'c');
    a!.emit('waiting', waiting('approval'));
    b!.emit('waiting', waiting('question'));
    c!.emit('waiting', waiting('takeover'));
    expect(await value(metrics, 'execution_worker_waiting_for_human')).toBe(3);
    a!.emit('resumed', { kind: 'approval', outcome: 'denied', answeredBy: 'alice', waitedMs: 4_000 });
    b!.emit('human_timeout', { kind: 'question', timeoutMs: 60_000 });
    expect(await value(metrics, 'execution_worker_waiting_for_human')).toBe(1);
    // A run stopped while it waits (SIGTERM) has no answer: its end removes it.
    c!.emit('execution_failed', { code: 'worker_shutdown', counters: { nSteps: 2, nAgentActions: 1, nScreenshots: 1, durationMs: 9_000 }, usage: { ...usage, estimatedCostUsd: null, billedTokens: 0, byModel: [] }, video: null });
    expect(await value(metrics, 'execution_worker_waiting_for_human')).toBe(0);
    expect(await value(metrics, 'execution_worker_human_answers_total', { kind: 'approval', outcome: 'denied' })).toBe(1);
    expect(await value(metrics, 'execution_worker_human_answers_total', { kind: 'question', outcome: 'timed_out' })).toBe(1);
    expect(await value(metrics, 'execution_worker_human_answers_total', { kind: 'takeover', outcome: 'answered' })).toBe(0);
    expect(await value(metrics, 'execution_worker_human_wait_seconds_sum')).toBe(4);
    expect(await value(metrics, 'execution_worker_executions_total', { status: 'failed', code: 'worker_shutdown' })).toBe(1);
    expect(await value(metrics, 'execution_worker_execution_duration_seconds_sum')).toBe(9);
  });

  it('hears only the executions it watches, and the events of each it counts', async () => {
    const metrics = createMetrics();
    const [watchedRun] = watched(metrics, 'a');
    const unwatched = createExecutionEvents({ executionId: 'b', redact: (v) => v });
    unwatched.emit('waiting', waiting('question'));
    watchedRun!.emit('model_turn', { step: 1, by: 'model', latencyMs: 2_000, overheadMs: null, stopReason: 'tool_use', usage, toolCalls: [] });
    watchedRun!.emit('model_turn', { step: 2, by: 'model', latencyMs: 1_000, overheadMs: 500, stopReason: 'tool_use', usage, toolCalls: [] });
    watchedRun!.emit('blocked', { url: 'https://evil.test/', layer: 'proxy', reason: 'not allowed' });
    watchedRun!.emit('execution_completed', { counters: { nSteps: 2, nAgentActions: 1, nScreenshots: 2, durationMs: 3_000 }, usage: { ...usage, estimatedCostUsd: null, billedTokens: 0, byModel: [] }, video: null });
    expect(await value(metrics, 'execution_worker_waiting_for_human')).toBe(0);
    expect(await value(metrics, 'execution_worker_model_latency_seconds_sum')).toBe(3);
    // The first turn has no worker time before it (overheadMs null): only the second counts.
    expect(await value(metrics, 'execution_worker_step_overhead_seconds_count')).toBe(1);
    expect(await value(metrics, 'execution_worker_blocked_requests_total', { layer: 'proxy' })).toBe(1);
    expect(await value(metrics, 'execution_worker_executions_total', { status: 'completed', code: '' })).toBe(1);
    expect(await value(metrics, 'execution_worker_execution_steps_sum')).toBe(2);
  });

  it("names an approval's outcome by the answer, any other kind's as answered", () => {
    const text = (answer: string) => ({ answer, decision: null });
    expect(answerOutcome('approval', text(' Approve '))).toBe('approved');
    expect(answerOutcome('approval', { answer: 'approve', decision: 'approve' })).toBe('approved');
    // The metric reads an approval as the model is told it: free text that starts with an approving word is a refusal.
    expect(answerOutcome('approval', text('go ahead please'))).toBe('denied');
    expect(answerOutcome('approval', text('approve? no'))).toBe('denied');
    expect(answerOutcome('approval', { answer: 'approve', decision: 'deny' })).toBe('denied');
    expect(answerOutcome('question', text('no'))).toBe('answered');
    expect(answerOutcome('takeover', text('done'))).toBe('answered');
  });
});
