import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError, notFound } from './http-errors.js';
import { answer, commonErrors, notFoundAnswer, pathParams, ref, reportSchema } from './openapi.js';
import type { ExecutionRow, ExecutionStatus } from './store.js';
import { executionQuery } from './validation.js';
import type { RunCostReader } from './run-cost.js';
import type { RouteDeps } from './workflow-routes.js';
import { KEY_ONLY, KEY_OR_SESSION } from './access.js';

/**
 * Execution endpoints: the list and the poll of the seed, and the worker's reports
 * (docs/api.md#every-call), which move the status `queued → running → completed | failed` (or `queued → failed` when
 * a run fails before it starts). Anything else is refused with 409. A report repeated with the
 * same timestamp (a client retrying after a lost answer) answers 200 and changes nothing. The end
 * of a run also records its cost, read from its output.json (run-cost.ts).
 */

interface StartedBody {
  startedAt: string;
}

interface Counters {
  durationMs?: number;
  nSteps?: number;
  nAgentActions?: number;
  nScreenshots?: number;
  outputUrl?: string | null;
  videoUrl?: string | null;
  logsUrl?: string | null;
}

interface CompletedBody extends Counters {
  completedAt: string;
}

interface FailedBody extends Counters {
  failedAt: string;
  error: { code: string; message: string };
}

export function addExecutionRoutes(app: FastifyInstance, deps: Pick<RouteDeps, 'store' | 'logger'> & { runCost: RunCostReader }): void {
  const { store, logger, runCost } = deps;

  app.get('/api/executions', {
    config: KEY_OR_SESSION,
    schema: { summary: 'List executions, newest first', querystring: executionQuery, response: { 200: answer('A page; total counts every match.', ref('ExecutionList')), ...commonErrors } },
  }, async (request) => {
    const query = request.query as { limit: number; offset: number; workflow_uuid?: string; workflowId?: string; status?: ExecutionStatus };
    const workflowId = query.workflow_uuid ?? query.workflowId;
    return store.listExecutions({ limit: query.limit, offset: query.offset, ...(workflowId ? { workflowId } : {}), ...(query.status ? { status: query.status } : {}) });
  });

  app.get('/api/executions/:executionId', {
    config: KEY_OR_SESSION,
    schema: { summary: 'One execution (poll until completed or failed)', params: pathParams('executionId'), response: { 200: answer('The execution.', ref('Execution')), 404: notFoundAnswer, ...commonErrors } },
  }, async (request) => {
    const { executionId } = request.params as { executionId: string };
    const execution = await store.getExecution(executionId);
    if (!execution) throw notFound(['path', 'executionId'], 'execution');
    return execution;
  });

  const move = async (
    id: string,
    from: readonly ExecutionStatus[],
    to: ExecutionStatus,
    fields: Partial<ExecutionRow>,
    idempotencyField: keyof ExecutionRow,
  ): Promise<ExecutionRow> => {
    const result = await store.transition(id, { from, to, fields, idempotencyField });
    if (result.kind === 'missing') throw notFound(['path', 'execution_uuid'], 'execution');
    if (result.kind === 'conflict') {
      throw new HttpError(409, [{ loc: ['path', 'execution_uuid'], msg: `execution is ${result.current}; it cannot become ${to}`, type: 'conflict' }]);
    }
    logger.info({ executionId: id, status: result.execution.status }, 'execution status reported');
    return result.execution;
  };
  const idOf = (request: FastifyRequest): string => (request.params as { execution_uuid: string }).execution_uuid;

  app.post('/api/executions/:execution_uuid/started', {
    // The worker's report: a key, never a dashboard session.
    config: KEY_ONLY,
    schema: reportSchema('Mark an execution started', 'StartedReport', 'queued → running. Repeating it with the same startedAt answers 200 unchanged.'),
  }, async (request) => {
    const body = request.body as StartedBody;
    return move(idOf(request), ['queued'], 'running', { started_at: body.startedAt }, 'started_at');
  });

  app.post('/api/executions/:execution_uuid/completed', {
    config: KEY_ONLY,
    schema: reportSchema('Report a completed run', 'CompletedReport', 'running → completed. Repeating it with the same completedAt answers 200 unchanged.'),
  }, async (request) => {
    const body = request.body as CompletedBody;
    const fields = { completed_at: body.completedAt, waiting: null, ...counterFields(body), cost_usd: await runCost(idOf(request)) };
    return move(idOf(request), ['running', 'waiting'], 'completed', fields, 'completed_at');
  });

  app.post('/api/executions/:execution_uuid/failed', {
    config: KEY_ONLY,
    schema: reportSchema('Report a failed run', 'FailedReport', 'queued | running | waiting → failed. Repeating it with the same failedAt answers 200 unchanged.'),
  }, async (request) => {
    const body = request.body as FailedBody;
    const fields = { failed_at: body.failedAt, error: { code: body.error.code, message: body.error.message }, waiting: null, ...counterFields(body), cost_usd: await runCost(idOf(request)) };
    return move(idOf(request), ['queued', 'running', 'waiting'], 'failed', fields, 'failed_at');
  });
}

function counterFields(body: Counters): Partial<ExecutionRow> {
  return {
    duration_ms: body.durationMs ?? null,
    n_steps: body.nSteps ?? 0,
    n_agent_actions: body.nAgentActions ?? 0,
    n_screenshots: body.nScreenshots ?? 0,
    output_url: body.outputUrl ?? null,
    video_url: body.videoUrl ?? null,
    logs_url: body.logsUrl ?? null,
  };
}
