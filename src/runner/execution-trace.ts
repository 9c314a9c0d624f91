import type { TraceAttributes, TraceSpan, Tracing } from '../telemetry/types.js';
import type { ExecutionEventSource, LoggedEvents } from '../execution/events.js';
import type { ExecutionSummary } from './types.js';
import type { JobData } from '../contract/job.js';

/**
 * One execution as one trace (docs/operations.md#traces). The root span `execution` and the
 * phases are opened by run-execution.ts, live, so that what runs inside them (the API's calls, the
 * uploads, the page's settle waits, every log line) is their child. The rest is heard on the
 * execution's event stream, which already carries when and how long: each model request, each
 * tool call, each wait for a person, the browser's start and the downloads become spans of the
 * phase they happened in, and the smaller moments (a blocked request, a navigation, an error)
 * events of it. The events are redacted by the stream and every string again by the tracing
 * adapter, as the process log is.
 *
 * Attribute names follow OpenTelemetry's semantic conventions where one exists (GenAI, HTTP,
 * errors); the rest are the worker's own, under `execution.`, `action.`, `human.`, `download.`.
 */

/** The spans of one execution that its phases and its events hang from. */
export interface ExecutionTrace {
  readonly tracing: Tracing;
  readonly root: TraceSpan;
  /** The phase running now; the spans made from events are its children (the root's before the first). */
  phase: TraceSpan | undefined;
}

/** The provider of the model, in GenAI's words (`gen_ai.provider.name`, and the older `gen_ai.system`). */
const PROVIDER = 'anthropic';

/** Opens the root span, continuing the job's `traceparent` when it carries one, else a trace of its own. */
export function openExecutionTrace(tracing: Tracing, job: JobData): ExecutionTrace {
  const root = tracing.startSpan('execution', {
    kind: 'consumer',
    parent: job.traceparent ?? null,
    attributes: { 'execution.id': job.executionId, 'workflow.id': job.workflowId, 'workflow_version.id': job.workflowVersionId },
  });
  return { tracing, root, phase: undefined };
}

/**
 * Runs a phase in a span of its own, a child of the root; `failedWith` reads a result that is a
 * failure (the phases answer failures rather than throw them) as an error code and message.
 */
export async function inPhase<T>(trace: ExecutionTrace, name: string, run: () => Promise<T>, failedWith?: (result: T) => { code: string; message: string } | undefined): Promise<T> {
  return trace.tracing.inSpan(name, { parent: trace.root }, async (span) => {
    trace.phase = span;
    try {
      const result = await run();
      const failed = failedWith?.(result);
      if (failed) span.fail(failed.code, failed.message);
      return result;
    } finally {
      trace.phase = undefined;
    }
  });
}

/** The root span's last word: how the execution ended, its counters and its usage. */
export function endExecutionTrace(trace: ExecutionTrace, summary: ExecutionSummary): void {
  const { root } = trace;
  if (summary.status === 'skipped') {
    root.setAttributes({ 'execution.status': 'skipped', 'execution.skip_reason': summary.reason });
    return;
  }
  const { document } = summary;
  root.setAttributes({
    'execution.status': summary.status,
    'execution.error.code': document.error?.code,
    'execution.steps': document.counters.nSteps,
    'execution.agent_actions': document.counters.nAgentActions,
    'execution.screenshots': document.counters.nScreenshots,
    'execution.duration_ms': document.counters.durationMs,
    'execution.reported': summary.reported,
    'gen_ai.usage.input_tokens': document.usage.inputTokens,
    'gen_ai.usage.output_tokens': document.usage.outputTokens,
    'gen_ai.usage.cache_read.input_tokens': document.usage.cacheReadInputTokens,
    'gen_ai.usage.cache_creation.input_tokens': document.usage.cacheCreationInputTokens,
    'execution.estimated_cost_usd': document.usage.estimatedCostUsd,
  });
  if (document.error) root.fail(document.error.code, document.error.message);
}

/**
 * Turns the execution's events into spans and span events while the execution runs; returns what
 * ends it (a wait for a person or a download still open is ended there). `now` is the stream's
 * clock: an event told at its end began `latencyMs` or `durationMs` before it.
 */
export function traceExecutionEvents(trace: ExecutionTrace, events: ExecutionEventSource, now: () => number): () => void {
  const { tracing, root } = trace;
  const parent = () => trace.phase ?? root;
  /** A span of something already over, begun at `startMs`: the caller says how it went and ends it. */
  const past = (name: string, startMs: number, attributes: TraceAttributes, kind: 'internal' | 'client' = 'internal'): TraceSpan =>
    tracing.startSpan(name, { kind, parent: parent(), startMs, attributes });
  const moment = (name: string, attributes: TraceAttributes, atMs: number) => parent().addEvent(name, attributes, atMs);
  /** The model the execution asked for (`gen_ai.request.model`), known once it starts. */
  let requestModel: string | undefined;
  let waiting: TraceSpan | undefined;
  const downloads = new Map<string, TraceSpan>();

  const modelRequest = (by: string, response: { model?: string; usage: LoggedEvents['final_check']['usage']; latencyMs: number }, atMs: number, more: TraceAttributes) => {
    const model = requestModel ?? response.model;
    const span = past(`chat ${model ?? PROVIDER}`, atMs - response.latencyMs, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': PROVIDER,
      'gen_ai.system': PROVIDER,
      'gen_ai.request.model': model,
      'gen_ai.response.model': response.model,
      'gen_ai.usage.input_tokens': response.usage.inputTokens,
      'gen_ai.usage.output_tokens': response.usage.outputTokens,
      'gen_ai.usage.cache_read.input_tokens': response.usage.cacheReadInputTokens,
      'gen_ai.usage.cache_creation.input_tokens': response.usage.cacheCreationInputTokens,
      'execution.request.by': by,
      ...more,
    }, 'client');
    span.end(atMs);
  };

  const unsubscribe = [
    events.on('execution_started', ({ model, toolset, computerTool }) => {
      requestModel = model;
      root.setAttributes({ 'gen_ai.request.model': model, 'execution.toolset': toolset, 'execution.computer_tool': computerTool });
    }),
    events.on('model_turn', (turn, { atMs }) =>
      modelRequest(turn.by, turn, atMs, {
        'gen_ai.response.finish_reasons': [turn.stopReason],
        'execution.step': turn.step,
        'execution.tool_calls': turn.toolCalls.length,
        'execution.overhead_ms': turn.overheadMs,
      }),
    ),
    events.on('final_check', (check, { atMs }) =>
      modelRequest('final_check', check, atMs, {
        'gen_ai.response.finish_reasons': check.stopReason ? [check.stopReason] : undefined,
        'execution.final_check.matches': check.matches,
      }),
    ),
    events.on('action', (action) => {
      const endMs = now();
      const span = past(`execute_tool ${action.action}`, endMs - (action.durationMs ?? 0), {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': action.action,
        'execution.step': action.step,
        'action.by': action.by ?? 'model',
        'action.tool': action.tool,
        'action.target': action.label ?? (action.point ? `${action.point.x},${action.point.y}` : undefined),
        'action.outcome': action.ok ? 'ok' : 'failed',
      });
      if (!action.ok) span.fail('action_failed', action.error);
      span.end(endMs);
    }),
    events.on('browser_ready', ({ durationMs, toolType }, { atMs }) => past('open_browser', atMs - durationMs, { 'execution.tool_type': toolType }).end(atMs)),
    events.on('video_started', ({ durationMs }, { atMs }) => past('start_video', atMs - durationMs, {}).end(atMs)),
    events.on('waiting', ({ kind, choices, timeoutAt }, { atMs }) => {
      waiting?.end(atMs);
      waiting = tracing.startSpan('human_wait', { parent: parent(), startMs: atMs, attributes: { 'human.kind': kind, 'human.choices': choices?.length, 'human.timeout_at': timeoutAt } });
    }),
    events.on('resumed', ({ outcome, waitedMs }, { atMs }) => {
      waiting?.setAttributes({ 'human.outcome': outcome, 'human.waited_ms': waitedMs });
      waiting?.end(atMs);
      waiting = undefined;
    }),
    events.on('human_timeout', ({ timeoutMs }, { atMs }) => {
      waiting?.fail('human_timeout', `no person answered within ${timeoutMs} ms`);
      waiting?.end(atMs);
      waiting = undefined;
    }),
    events.on('download', (download, { atMs }) => {
      const attributes = { 'download.id': download.id, 'download.name': download.name, 'url.full': withoutQuery(download.url) };
      if (download.state === 'started') {
        downloads.set(download.id, tracing.startSpan('download', { parent: parent(), startMs: atMs, attributes }));
        return;
      }
      const span = downloads.get(download.id) ?? tracing.startSpan('download', { parent: parent(), startMs: atMs, attributes });
      downloads.delete(download.id);
      span.setAttributes({ 'download.state': download.state, 'download.bytes': download.bytes, 'download.content_type': download.contentType });
      if (download.state === 'failed') span.fail('download_failed', download.error);
      span.end(atMs);
    }),
    events.on('blocked', ({ url, layer, reason }, { atMs }) => moment('request blocked', { 'url.full': withoutQuery(url), 'blocked.layer': layer, 'blocked.reason': reason }, atMs)),
    events.on('navigation', ({ url, ok, reason }, { atMs }) => moment('navigation', { 'url.full': withoutQuery(url), 'navigation.ok': ok, 'navigation.reason': reason }, atMs)),
    events.on('error', ({ phase, code, message }, { atMs }) => moment('error', { 'execution.phase': phase, 'error.type': code, 'error.message': message }, atMs)),
    events.on('execution_failed_validation', ({ code, message }, { atMs }) => moment('error', { 'execution.phase': 'validate', 'error.type': code, 'error.message': message }, atMs)),
    events.on('input_file', ({ name, bytes, contentType }, { atMs }) => moment('input file', { 'file.name': name, 'file.size': bytes, 'file.content_type': contentType }, atMs)),
    events.on('finish', ({ status, code, by }, { atMs }) => moment('finish', { 'execution.status': status, 'error.type': code, 'execution.finished_by': by }, atMs)),
    events.on('replayed_step', ({ step, actions }, { atMs }) => moment('replayed step', { 'execution.step': step, 'execution.actions': actions }, atMs)),
    events.on('replay_stopped', ({ step, cachedStep, reason }, { atMs }) => moment('replay stopped', { 'execution.step': step, 'execution.cached_step': cachedStep, 'execution.reason': reason }, atMs)),
    events.on('step_repair', ({ step, cachedStep, outcome, modelSteps }, { atMs }) => moment('step repair', { 'execution.step': step, 'execution.cached_step': cachedStep, 'execution.repair.outcome': outcome, 'execution.repair.model_steps': modelSteps }, atMs)),
    events.on('browser_crashed', ({ message }, { atMs }) => moment('browser crashed', { 'error.message': message }, atMs)),
    events.on('profile_loaded', ({ id, loaded }, { atMs }) => moment('profile loaded', { 'profile.id': id, 'profile.loaded': loaded }, atMs)),
    events.on('profile_saved', ({ id, bytes }, { atMs }) => moment('profile saved', { 'profile.id': id, 'profile.bytes': bytes }, atMs)),
  ];
  return () => {
    for (const off of unsubscribe) off();
    // A wait or a download the run left open ends with it.
    const at = now();
    waiting?.end(at);
    for (const span of downloads.values()) span.end(at);
    downloads.clear();
  };
}

/** A URL without its query and fragment (pre-signed signatures, tokens) or credentials. */
function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return url.split(/[?#]/, 1)[0] ?? '';
  }
}
