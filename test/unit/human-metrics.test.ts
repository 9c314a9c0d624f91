import { describe, expect, it } from 'vitest';
import { answerOutcome } from '../../src/domain/human-protocol.js';
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

describe('metrics of runs waiting for a person', () => {
  it('counts each waiting execution once, until its answer, its timeout or its end', async () => {
    const metrics = createMetrics();
    metrics.observe('waiting', { kind: 'approval' }, 'a');
    metrics.observe('waiting', { kind: 'question' }, 'b');
    metrics.observe('waiting', { kind: 'takeover' }, 'c');
    expect(await value(metrics, 'execution_worker_waiting_for_human')).toBe(3);
    metrics.observe('resumed', { kind: 'approval', outcome: 'denied', waitedMs: 4_000 }, 'a');
    metrics.observe('human_timeout', { kind: 'question', timeoutMs: 60_000 }, 'b');
    expect(await value(metrics, 'execution_worker_waiting_for_human')).toBe(1);
    // A run stopped while it waits (SIGTERM) has no answer: its end removes it.
    metrics.observe('execution_failed', { code: 'worker_shutdown' }, 'c');
    expect(await value(metrics, 'execution_worker_waiting_for_human')).toBe(0);
    expect(await value(metrics, 'execution_worker_human_answers_total', { kind: 'approval', outcome: 'denied' })).toBe(1);
    expect(await value(metrics, 'execution_worker_human_answers_total', { kind: 'question', outcome: 'timed_out' })).toBe(1);
    expect(await value(metrics, 'execution_worker_human_answers_total', { kind: 'takeover', outcome: 'answered' })).toBe(0);
    expect(await value(metrics, 'execution_worker_human_wait_seconds_sum')).toBe(4);
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
