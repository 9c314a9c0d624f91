import type { FastifyRequest } from 'fastify';
import { execution, executionList, executionQuery, type ExecutionRow, type ExecutionStatus } from '../contract/executions.js';
import { completedReportAccepted, failedReportAccepted, startedReportAccepted, type FinalFields } from '../contract/reports.js';
import type { App } from './app.js';
import { HttpError, isObject, notFound } from './http-errors.js';
import { answer, commonErrors, notFoundAnswer, pathParams, reportSchema } from './openapi.js';
import type { RunCostReader } from './run-cost.js';
import type { RouteDeps } from './workflow-routes.js';
import { OPERATOR, WORKER_READ, WORKER_REPORT } from './access.js';

/**
 * Execution endpoints: the list and the poll of the service description, and the worker's reports
 * (docs/api.md#every-call), which move the status `queued → running → completed | failed` (or `queued → failed` when
 * a run fails before it starts). Anything else is refused with 409. A report repeated with the
 * same timestamp (a client retrying after a lost answer) answers 200 and changes nothing. The end
 * of a run also records its cost, read from its output.json (run-cost.ts).
 */

export function addExecutionRoutes(app: App, deps: Pick<RouteDeps, 'store' | 'logger'> & { runCost: RunCostReader }): void {
  const { store, logger, runCost } = deps;

  app.get('/api/executions', {
    config: OPERATOR,
    // `workflowId` is another spelling of the filter (docs/api.md): read as `workflow_uuid`, which wins.
    preValidation: workflowIdAlias,
    schema: { summary: 'List executions, newest first', querystring: executionQuery, response: { 200: answer('A page; total counts every match.', executionList), ...commonErrors } },
  }, async (request) => {
    const { limit, offset, workflow_uuid: workflowId, status } = request.query;
    return store.listExecutions({ limit, offset, ...(workflowId ? { workflowId } : {}), ...(status ? { status } : {}) });
  });

  app.get('/api/executions/:executionId', {
    // The worker reads it too (the cancel check, docs/api.md#every-call).
    config: WORKER_READ,
    schema: { summary: 'One execution (poll until completed or failed)', params: pathParams('executionId'), response: { 200: answer('The execution.', execution), 404: notFoundAnswer, ...commonErrors } },
  }, async (request) => {
    const { executionId } = request.params;
    const row = await store.getExecution(executionId);
    if (!row) throw notFound(['path', 'executionId'], 'execution');
    return row;
  });

  const move = async (
    id: string,
    from: readonly ExecutionStatus[],
    to: ExecutionStatus,
    fields: Partial<ExecutionRow>,
    idempotencyField: keyof ExecutionRow & string,
  ): Promise<ExecutionRow> => {
    const result = await store.transition(id, { from, to, fields, idempotencyField });
    if (result.kind === 'missing') throw notFound(['path', 'execution_uuid'], 'execution');
    if (result.kind === 'conflict') {
      throw new HttpError(409, [{ loc: ['path', 'execution_uuid'], msg: `execution is ${result.current}; it cannot become ${to}`, type: 'conflict' }]);
    }
    logger.info({ executionId: id, status: result.execution.status }, 'execution status reported');
    return result.execution;
  };
  app.post('/api/executions/:execution_uuid/started', {
    // The worker's report: a worker's key, never a dashboard session.
    config: WORKER_REPORT,
    schema: reportSchema('Mark an execution started', startedReportAccepted, 'queued → running. Repeating it with the same startedAt answers 200 unchanged.'),
  }, async ({ params, body }) => {
    return move(params.execution_uuid, ['queued'], 'running', { started_at: body.startedAt }, 'started_at');
  });

  app.post('/api/executions/:execution_uuid/completed', {
    config: WORKER_REPORT,
    schema: reportSchema('Report a completed run', completedReportAccepted, 'running → completed. Repeating it with the same completedAt answers 200 unchanged.'),
  }, async ({ params, body }) => {
    const fields = { completed_at: body.completedAt, waiting: null, ...counterFields(body), cost_usd: await runCost(params.execution_uuid) };
    return move(params.execution_uuid, ['running', 'waiting'], 'completed', fields, 'completed_at');
  });

  app.post('/api/executions/:execution_uuid/failed', {
    config: WORKER_REPORT,
    schema: reportSchema('Report a failed run', failedReportAccepted, 'queued | running | waiting → failed. Repeating it with the same failedAt answers 200 unchanged.'),
  }, async ({ params, body }) => {
    const fields = { failed_at: body.failedAt, error: { code: body.error.code, message: body.error.message }, waiting: null, ...counterFields(body), cost_usd: await runCost(params.execution_uuid) };
    return move(params.execution_uuid, ['queued', 'running', 'waiting'], 'failed', fields, 'failed_at');
  });
}

/** The counters and urls of a final report, as the execution keeps them (a report that left them out: none yet). */
function counterFields(body: Partial<FinalFields>): Partial<ExecutionRow> {
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

/** `?workflowId=` for `?workflow_uuid=`: both name the workflow; `workflow_uuid` wins. */
async function workflowIdAlias(request: FastifyRequest): Promise<void> {
  const { query } = request;
  if (isObject(query) && query.workflowId !== undefined && query.workflow_uuid === undefined) query.workflow_uuid = query.workflowId;
}
