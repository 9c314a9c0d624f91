import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EventSource } from './event-stream.js';

/**
 * Prometheus metrics of the daemon (`GET /metrics`). Fed by execution events, so the runner
 * and the loop know nothing about Prometheus.
 */
export interface Metrics {
  readonly registry: Registry;
  /**
   * Subscribes to one execution's events, a typed handler per event it counts (the id tells the
   * executions waiting for a person apart). The stream goes with the execution: nothing to undo.
   */
  watch<Lines extends MetricEvents, Inner extends MetricInnerEvents>(events: EventSource<Lines, Inner>, executionId: string): void;
  /** Sources read at scrape time. */
  setSources(sources: MetricSources): void;
  uploadRetried(): void;
  /** Whether Chromium runs with its own sandbox (0 when the worker is root: docs/operations.md#browser-sandbox). */
  setBrowserSandbox(on: boolean): void;
}

/**
 * The events the metrics hear, with the fields they read. The runner's map (execution/events.ts)
 * declares them whole; its stream is a `MetricEventSource` only while it has these names with
 * these fields, so a renamed event or field is a type error where the daemon wires the metrics.
 */
export type MetricEvents = {
  waiting: object;
  resumed: { kind: string; outcome: string; waitedMs: number };
  human_timeout: { kind: string };
  model_turn: { latencyMs: number; overheadMs: number | null };
  model_prefix_mismatch: object;
  blocked: { layer: string };
  execution_completed: ExecutionEnd;
  execution_failed: ExecutionEnd;
};
type ExecutionEnd = { code?: string; counters: { durationMs: number; nSteps: number } };

/** The internal events (never a line) the metrics hear: each model request's cost, told where every request passes. */
export type MetricInnerEvents = {
  model_usage: { model: string; costUsd: number };
};

/** Values read at scrape time. */
export interface MetricSources {
  activeExecutions?: () => number;
  outboxDepth?: () => number;
  /** More executions this worker would take now: its concurrency and its memory room (docs/operations.md#admission-by-capacity). */
  freeSlots?: () => number;
  /** RSS of the worker's process tree (Node, Chromium, ffmpeg). */
  memoryBytes?: () => number | undefined;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'execution_worker_process_' });
  let sources: MetricSources = {};

  const executions = new Counter({
    name: 'execution_worker_executions_total',
    help: 'Executions ended, by status and error code.',
    labelNames: ['status', 'code'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'execution_worker_execution_duration_seconds',
    help: 'Wall time of executions from started to end.',
    buckets: [5, 15, 30, 60, 120, 300, 600, 1200, 3600],
    registers: [registry],
  });
  const steps = new Histogram({
    name: 'execution_worker_execution_steps',
    help: 'Model turns per execution.',
    buckets: [1, 2, 5, 10, 20, 50, 100, 200],
    registers: [registry],
  });
  const modelLatency = new Histogram({
    name: 'execution_worker_model_latency_seconds',
    help: 'Latency of one model turn.',
    buckets: [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
    registers: [registry],
  });
  const stepOverhead = new Histogram({
    name: 'execution_worker_step_overhead_seconds',
    help: 'Worker time per step: from a model response to the next model request.',
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
    registers: [registry],
  });
  const blocked = new Counter({
    name: 'execution_worker_blocked_requests_total',
    help: 'Requests refused by the allow-list, by enforcement layer.',
    labelNames: ['layer'] as const,
    registers: [registry],
  });
  const prefixMismatches = new Counter({
    name: 'execution_worker_model_prefix_mismatches_total',
    help: 'Model requests refused by the thinking-block prefix check and sent again with drop_block (a worker bug: requests are append-only).',
    registers: [registry],
  });
  const modelCost = new Counter({
    name: 'execution_worker_model_cost_usd_total',
    help: "Estimated cost of model requests in USD, each at its model's prices, by model.",
    labelNames: ['model'] as const,
    registers: [registry],
  });
  const uploads = new Counter({
    name: 'execution_worker_upload_retries_total',
    help: 'Artifact upload attempts that were retried.',
    registers: [registry],
  });
  // Executions waiting for a person now: added by `waiting`, removed by the wait's end or the
  // run's (a run stopped while it waits, by SIGTERM, emits no `resumed`).
  const waiting = new Set<string>();
  new Gauge({
    name: 'execution_worker_waiting_for_human',
    help: 'Executions of this process waiting for a person (ask_human) now.',
    registers: [registry],
    collect() {
      this.set(waiting.size);
    },
  });
  const answers = new Counter({
    name: 'execution_worker_human_answers_total',
    help: 'Waits for a person ended, by kind and outcome (answered, approved, denied, timed_out).',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  const humanWait = new Histogram({
    name: 'execution_worker_human_wait_seconds',
    help: 'Time from a question to its answer.',
    buckets: [10, 30, 60, 300, 900, 1800, 3600, 14400, 86400],
    registers: [registry],
  });
  const sandbox = new Gauge({
    name: 'execution_worker_browser_sandbox',
    help: "1 when Chromium runs with its own sandbox, 0 when it is off (the worker runs as root).",
    registers: [registry],
  });
  new Gauge({
    name: 'execution_worker_active_executions',
    help: 'Executions running now in this process.',
    registers: [registry],
    collect() {
      this.set(sources.activeExecutions?.() ?? 0);
    },
  });
  new Gauge({
    name: 'execution_worker_free_slots',
    help: 'More executions this worker would take now, by its concurrency and its memory room.',
    registers: [registry],
    collect() {
      this.set(sources.freeSlots?.() ?? 0);
    },
  });
  new Gauge({
    name: 'execution_worker_memory_bytes',
    help: 'Resident memory of the worker process tree (Node, Chromium, ffmpeg).',
    registers: [registry],
    collect() {
      const bytes = sources.memoryBytes?.();
      if (bytes !== undefined) this.set(bytes);
    },
  });
  new Gauge({
    name: 'execution_worker_outbox_depth',
    help: 'Final reports waiting to be delivered to the API.',
    registers: [registry],
    collect() {
      this.set(sources.outboxDepth?.() ?? 0);
    },
  });

  return {
    registry,
    setSources(next) {
      sources = { ...sources, ...next };
    },
    uploadRetried: () => uploads.inc(),
    setBrowserSandbox: (on) => sandbox.set(on ? 1 : 0),
    watch(events, executionId) {
      events.on('waiting', () => {
        waiting.add(executionId);
      });
      events.on('resumed', ({ kind, outcome, waitedMs }) => {
        waiting.delete(executionId);
        answers.inc({ kind, outcome });
        humanWait.observe(waitedMs / 1000);
      });
      events.on('human_timeout', ({ kind }) => {
        waiting.delete(executionId);
        answers.inc({ kind, outcome: 'timed_out' });
      });
      events.on('model_turn', ({ latencyMs, overheadMs }) => {
        modelLatency.observe(latencyMs / 1000);
        if (overheadMs !== null) stepOverhead.observe(overheadMs / 1000);
      });
      events.on('model_prefix_mismatch', () => prefixMismatches.inc());
      events.on('model_usage', ({ model, costUsd }) => modelCost.inc({ model }, costUsd));
      events.on('blocked', ({ layer }) => blocked.inc({ layer }));
      const ended = (status: 'completed' | 'failed', { code, counters }: ExecutionEnd): void => {
        waiting.delete(executionId);
        executions.inc({ status, code: code ?? '' });
        duration.observe(counters.durationMs / 1000);
        steps.observe(counters.nSteps);
      };
      events.on('execution_completed', (fields) => ended('completed', fields));
      events.on('execution_failed', (fields) => ended('failed', fields));
    },
  };
}
