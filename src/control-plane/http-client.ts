import type { z } from 'zod';
import { executionReading } from '../contract/executions.js';
import { formatIssues } from '../contract/json.js';
import { completedReport, failedReport, resumedReport, waitingReport, type CompletedReport, type FailedReport, type ResumedReport, type WaitingReport } from '../contract/reports.js';
import { versionListReading } from '../contract/workflows.js';
import { noTracing } from '../telemetry/tracing.js';
import type { Logger, Tracing } from '../telemetry/types.js';
import { backoffDelayMs, parseRetryAfterMs, sleep as defaultSleep } from './retry.js';
import type { ExecutionReading } from '../contract/executions.js';
import type { VersionReading } from '../contract/workflows.js';
import type { ControlPlane, StartedResult } from './types.js';

/**
 * The control-plane port over HTTP (docs/api.md): the operator's API as the worker calls it.
 * Every call carries `X-Service-Key`; network errors, 429 and 5xx are retried with exponential
 * backoff and full jitter (a `Retry-After` header wins over the computed delay). Final reports
 * retry for at least `finalReportDeadlineMs` and then throw; they are never dropped silently.
 */

export interface HttpControlPlaneOptions {
  /** The service's `{base_url}`, e.g. `https://api.example.com`. */
  baseUrl: string;
  /** Sent as `X-Service-Key`. Secret: never logged. */
  apiKey: string;
  logger: Logger;
  /** How long `completed`/`failed` reports keep being retried. Default 600 000 (10 min). */
  finalReportDeadlineMs?: number;
  /** Cap on one HTTP request, response body included. Default 30 000. */
  requestTimeoutMs?: number;
  /** First backoff ceiling; doubles on each retry. Default 500. */
  baseDelayMs?: number;
  /** Largest backoff ceiling. Default 30 000. */
  maxDelayMs?: number;
  /** Attempts of `markStarted` and the GETs before they give up. Default 5. */
  maxAttempts?: number;
  /**
   * Each attempt is a client span of the trace active where the call is made (HTTP semantic
   * conventions) and carries its W3C `traceparent` (docs/operations.md#traces).
   */
  tracing?: Tracing;
  /** Seams for unit tests: the jitter source and the wait between attempts. */
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock a final report's deadline is measured on (tests give one that the waits move). */
  now?: () => number;
}

/** A call that failed for good: a non-retried status, or retries exhausted. */
export class ControlPlaneError extends Error {
  override readonly name = 'ControlPlaneError';
  /** HTTP status of the last response; undefined when the last attempt never got one. */
  readonly status: number | undefined;

  // No response body here, nor in the message: an execution's body holds its input, secrets
  // included, and an error travels into logs.jsonl, output.json and the failed report. The
  // message names the API's own error text or the fields that were wrong, never values.
  constructor(message: string, status: number | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
  }
}

type RetryPolicy = { kind: 'attempts'; maxAttempts: number } | { kind: 'deadline'; deadlineMs: number };

interface CallOptions {
  /** The path with its variable parts named (`/api/executions/{executionId}/started`): the span's name. */
  template: string;
  body?: unknown;
  signal?: AbortSignal;
  policy: RetryPolicy;
  /** Non-2xx statuses handed back to the caller instead of thrown (404/409 on `started`). */
  passStatuses?: readonly number[];
}

interface Reply {
  status: number;
  body: unknown;
}

/** A server asking for more than this is waited for this long only; the next attempt asks again. */
const MAX_RETRY_AFTER_MS = 300_000;

export function createHttpControlPlane(opts: HttpControlPlaneOptions): ControlPlane {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  // The caller binds the component name (the daemon does), so it is not bound twice here.
  const log = opts.logger;
  const finalReportDeadlineMs = opts.finalReportDeadlineMs ?? 600_000;
  const requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
  const baseDelayMs = opts.baseDelayMs ?? 500;
  const maxDelayMs = opts.maxDelayMs ?? 30_000;
  const bounded: RetryPolicy = { kind: 'attempts', maxAttempts: Math.max(1, opts.maxAttempts ?? 5) };
  const final: RetryPolicy = { kind: 'deadline', deadlineMs: finalReportDeadlineMs };
  const random = opts.random ?? Math.random;
  const wait = opts.sleep ?? defaultSleep;
  const now = opts.now ?? Date.now;
  const tracing = opts.tracing ?? noTracing;
  const server = serverOf(baseUrl);

  async function call(method: 'GET' | 'POST', path: string, options: CallOptions): Promise<Reply> {
    const url = `${baseUrl}${path}`;
    const headers: Record<string, string> = { 'X-Service-Key': opts.apiKey, Accept: 'application/json' };
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(options.body);
    }
    const firstAttemptAt = now();
    for (let attempt = 0; ; attempt += 1) {
      options.signal?.throwIfAborted();
      let reply: (Reply & { retryAfterMs: number | undefined }) | undefined;
      let networkError: unknown;
      const span = tracing.startSpan(`${method} ${options.template}`, {
        kind: 'client',
        attributes: { 'http.request.method': method, 'url.full': server.url(path), 'url.template': options.template, 'server.address': server.address, 'server.port': server.port, 'http.request.resend_count': attempt > 0 ? attempt : undefined },
      });
      try {
        const timeout = AbortSignal.timeout(requestTimeoutMs);
        const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
        const sent = { ...headers };
        tracing.withSpan(span, () => tracing.inject(sent));
        const response = await fetch(url, { method, headers: sent, body: payload, signal });
        const text = await response.text();
        reply = { status: response.status, body: parseBody(text), retryAfterMs: parseRetryAfterMs(response.headers.get('retry-after')) };
        span.setAttributes({ 'http.response.status_code': reply.status });
        if (reply.status >= 400) span.fail(String(reply.status));
      } catch (error) {
        span.fail(options.signal?.aborted ? 'cancelled' : error instanceof Error ? error.name : 'network', describeNetworkError(error));
        // The caller gave up: that is not a failure of the API, and it is not retried.
        if (options.signal?.aborted) throw options.signal.reason;
        networkError = error;
      } finally {
        span.end();
      }

      if (reply !== undefined) {
        if (reply.status >= 200 && reply.status < 300) return reply;
        if (options.passStatuses?.includes(reply.status)) return reply;
        if (!isRetryableStatus(reply.status)) {
          const reason = refusalReason(reply.body);
          // The process log keeps the answer's body (capped), as the API's refusals are read there; the process
          // log is scrubbed of every secret the process knows. The error, which travels into a run's files, never does.
          log.error({ method, path, status: reply.status, reason, body: loggableBody(reply.body) }, 'control-plane call refused');
          throw new ControlPlaneError(`${method} ${path} answered ${reply.status}: ${reason}`, reply.status);
        }
      }

      const failure = reply !== undefined ? `status ${reply.status}` : describeNetworkError(networkError);
      const elapsedMs = now() - firstAttemptAt;
      const exhausted =
        options.policy.kind === 'attempts' ? attempt + 1 >= options.policy.maxAttempts : elapsedMs >= options.policy.deadlineMs;
      if (exhausted) {
        log.error({ method, path, attempts: attempt + 1, elapsedMs, failure, reason: reply ? refusalReason(reply.body) : undefined }, 'control-plane call failed after retries');
        throw new ControlPlaneError(
          `${method} ${path} failed after ${attempt + 1} attempts over ${elapsedMs} ms: ${failure}`,
          reply?.status,
          { cause: networkError },
        );
      }
      const retryAfterMs = reply?.retryAfterMs;
      const delayMs = retryAfterMs !== undefined ? Math.min(retryAfterMs, MAX_RETRY_AFTER_MS) : backoffDelayMs(attempt, baseDelayMs, maxDelayMs, random);
      log.warn({ method, path, attempt: attempt + 1, failure, delayMs }, 'control-plane call failed; retrying');
      await wait(delayMs, options.signal);
    }
  }

  const executionPath = (id: string, suffix = ''): string => `/api/executions/${encodeURIComponent(id)}${suffix}`;
  const executionTemplate = (suffix = ''): string => `/api/executions/{executionId}${suffix}`;

  return {
    async getExecution(executionId, signal): Promise<ExecutionReading> {
      const reply = await call('GET', executionPath(executionId), { template: executionTemplate(), signal, policy: bounded });
      const read = executionReading.safeParse(reply.body);
      if (!read.success) {
        throw new ControlPlaneError(`GET ${executionPath(executionId)} answered an unexpected body (${formatIssues(read.error.issues)})`, reply.status);
      }
      return read.data;
    },

    async listVersions(workflowId, signal): Promise<VersionReading[]> {
      const path = `/api/workflows/${encodeURIComponent(workflowId)}/versions`;
      const reply = await call('GET', path, { template: '/api/workflows/{workflowId}/versions', signal, policy: bounded });
      const read = versionListReading.safeParse(reply.body);
      if (!read.success) {
        throw new ControlPlaneError(`GET ${path} answered an unexpected body (${formatIssues(read.error.issues)})`, reply.status);
      }
      return read.data.items;
    },

    async markStarted(executionId, startedAt, signal): Promise<StartedResult> {
      const reply = await call('POST', executionPath(executionId, '/started'), {
        template: executionTemplate('/started'),
        body: { startedAt },
        signal,
        policy: bounded,
        passStatuses: [404, 409],
      });
      if (reply.status === 404 || reply.status === 409) {
        const reason = errorMessage(reply.body) ?? (reply.status === 404 ? 'execution not found' : 'execution is not runnable');
        log.info({ executionId, status: reply.status, reason }, 'execution is no longer runnable');
        return { ok: false, status: reply.status, reason };
      }
      return { ok: true };
    },

    async markWaiting(executionId, report: WaitingReport, signal: AbortSignal) {
      const path = executionPath(executionId, '/waiting');
      await call('POST', path, { template: executionTemplate('/waiting'), body: reportBody(waitingReport, report, path), signal, policy: bounded });
    },

    async markResumed(executionId, report: ResumedReport, signal: AbortSignal) {
      const path = executionPath(executionId, '/resumed');
      await call('POST', path, { template: executionTemplate('/resumed'), body: reportBody(resumedReport, report, path), signal, policy: bounded });
    },

    async reportCompleted(executionId, report: CompletedReport, signal?: AbortSignal) {
      const path = executionPath(executionId, '/completed');
      await call('POST', path, { template: executionTemplate('/completed'), body: reportBody(completedReport, report, path), policy: final, ...(signal ? { signal } : {}) });
    },

    async reportFailed(executionId, report: FailedReport, signal?: AbortSignal) {
      const path = executionPath(executionId, '/failed');
      await call('POST', path, { template: executionTemplate('/failed'), body: reportBody(failedReport, report, path), policy: final, ...(signal ? { signal } : {}) });
    },
  };

  /**
   * A report's body: its fields as its schema declares them (docs/api.md#every-call), so no stray
   * field is sent. One that is not of its shape is a bug: logged, and sent as it is, never dropped
   * (the API's answer says the rest).
   */
  function reportBody<S extends z.ZodType>(schema: S, report: z.input<S>, path: string): unknown {
    const checked = schema.safeParse(report);
    if (checked.success) return checked.data;
    log.error({ path, problem: formatIssues(checked.error.issues) }, 'a report is not of its shape; sent as it is');
    return report;
  }
}

/**
 * The API's address as spans show it (`server.address`, `server.port`, `url.full`): never a user
 * or password the base URL may hold, and the calls have no query.
 */
function serverOf(baseUrl: string): { address: string | undefined; port: number | undefined; url(path: string): string } {
  let parsed: URL | undefined;
  try {
    parsed = new URL(baseUrl);
  } catch {
    parsed = undefined;
  }
  if (!parsed) return { address: undefined, port: undefined, url: (path) => path };
  const origin = `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  return {
    address: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80,
    url: (path) => `${origin}${path}`,
  };
}

function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function parseBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The first readable message of an error body: the service description's `detail[].msg`, or a string detail. */
function errorMessage(body: unknown): string | undefined {
  if (!isObject(body)) return typeof body === 'string' && body !== '' ? body.slice(0, 500) : undefined;
  const detail = body.detail;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail) && isObject(detail[0]) && typeof detail[0].msg === 'string') return detail[0].msg;
  return undefined;
}

/** A refused call's body for the process log, cut at 4,000 characters. */
function loggableBody(body: unknown): unknown {
  if (body === undefined || body === null) return body;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return text.length <= 4_000 ? body : `${text.slice(0, 4_000)}…`;
}

/** What an error answer says of itself: the API's error text (capped), or that it said nothing readable. */
function refusalReason(body: unknown): string {
  const first = isObject(body) && Array.isArray(body.detail) && isObject(body.detail[0]) ? body.detail[0] : undefined;
  // A validation item's place (`loc`) helps; the `input` such an item may echo is never taken.
  const loc = first && Array.isArray(first.loc) ? first.loc.filter((part) => typeof part === 'string' || typeof part === 'number').join('.') : '';
  const message = loc === '' ? errorMessage(body) : `${loc}: ${errorMessage(body) ?? ''}`;
  return message === undefined ? '(no error message)' : message.length > 300 ? `${message.slice(0, 300)}…` : message;
}

function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.name}: ${error.message}${cause}`;
  }
  return String(error);
}
