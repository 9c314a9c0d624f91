import { HttpError, notFound, readJsonBody, sendJson } from './http-utils.js';
import type { createRouter } from './router.js';
import type { ExecutionRow, ExecutionStatus } from './store.js';
import { parseExecutionQuery, validateBody } from './validation.js';
import type { RouteDeps } from './workflow-routes.js';

/**
 * Execution endpoints: the list and the poll of the seed, and the worker's reports of contract
 * §2, which move the status `queued → running → completed | failed` (or `queued → failed` when
 * a run fails before it starts). Anything else is refused with 409. A report repeated with the
 * same timestamp (a client retrying after a lost answer) answers 200 and changes nothing.
 */

type Router = ReturnType<typeof createRouter>;

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

export function addExecutionRoutes(router: Router, deps: Pick<RouteDeps, 'store' | 'logger'>): void {
  const { store, logger } = deps;

  router.add('GET', '/api/executions', async ({ res, query }) => {
    sendJson(res, 200, await store.listExecutions(parseExecutionQuery(query)));
  });

  router.add('GET', '/api/executions/:executionId', async ({ res, params }) => {
    const execution = await store.getExecution(params.executionId as string);
    if (!execution) throw notFound(['path', 'executionId'], 'execution');
    sendJson(res, 200, execution);
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

  router.add('POST', '/api/executions/:execution_uuid/started', async ({ req, res, params }) => {
    const body = validateBody<StartedBody>('StartedReport', await readJsonBody(req));
    const execution = await move(params.execution_uuid as string, ['queued'], 'running', { started_at: body.startedAt }, 'started_at');
    sendJson(res, 200, execution);
  });

  router.add('POST', '/api/executions/:execution_uuid/completed', async ({ req, res, params }) => {
    const body = validateBody<CompletedBody>('CompletedReport', await readJsonBody(req));
    const fields = { completed_at: body.completedAt, waiting: null, ...counterFields(body) };
    sendJson(res, 200, await move(params.execution_uuid as string, ['running', 'waiting'], 'completed', fields, 'completed_at'));
  });

  router.add('POST', '/api/executions/:execution_uuid/failed', async ({ req, res, params }) => {
    const body = validateBody<FailedBody>('FailedReport', await readJsonBody(req));
    const fields = { failed_at: body.failedAt, error: { code: body.error.code, message: body.error.message }, waiting: null, ...counterFields(body) };
    sendJson(res, 200, await move(params.execution_uuid as string, ['queued', 'running', 'waiting'], 'failed', fields, 'failed_at'));
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
