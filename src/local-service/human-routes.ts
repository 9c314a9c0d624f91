import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { ExecutionRow, ExecutionStatus } from '../contract/executions.js';
import { answerRequest, humanInput, liveInputRequest } from '../contract/human.js';
import { resumedReportAccepted, waitingReportAccepted } from '../contract/reports.js';
import { answerField, answersStreamKey, answersStreamTtlMs } from '../domain/human-protocol.js';
import type { App } from './app.js';
import type { Credential } from './auth.js';
import type { Logger } from '../telemetry/types.js';
import { HttpError, notFound } from './http-errors.js';
import { humanSchema, reportSchema } from './openapi.js';
import type { Store } from './store.js';
import { OPERATOR, WORKER_REPORT } from './access.js';

/**
 * A person in the loop, on the local API (docs/human-in-the-loop.md):
 *   POST /api/executions/{id}/waiting   the worker: the run waits for a person (running → waiting)
 *   POST /api/executions/{id}/resumed   the worker: a person answered (waiting → running)
 *   POST /api/executions/{id}/answer    a person's answer or decision, written to the execution's answers
 *                                       stream under the signed-in identity
 *   POST /api/executions/{id}/input     a person's pointer, wheel or key for the page (takeover)
 * Answers and input are taken only while the execution waits (409 otherwise); of two answers to
 * one question the first is taken and the second refused.
 */

/** What the answer and input routes answer with 202: the execution, and the stream entry an answer became. */
const answerTaken = z.object({ execution_uuid: z.string(), entry: z.string() });
const inputTaken = z.object({ execution_uuid: z.string() });

/** How long "this question was answered" is remembered (longer than any wait). */
const ANSWERED_TTL_MS = 31 * 86_400_000;
/** Entries kept in an answers stream (inputs of a long takeover); the worker reads them as they come. */
const STREAM_MAX_LENGTH = 10_000;

export function addHumanRoutes(
  app: App,
  deps: { store: Store; redis: Redis; queuePrefix: string; queueName: string; keyPrefix: string; logger: Logger },
): void {
  const { store, redis, logger } = deps;
  const streamKey = (id: string) => answersStreamKey(deps.queuePrefix, deps.queueName, id);

  const move = async (id: string, from: readonly ExecutionStatus[], to: ExecutionStatus, fields: Partial<ExecutionRow>, idempotencyField: keyof ExecutionRow & string) => {
    const result = await store.transition(id, { from, to, fields, idempotencyField });
    if (result.kind === 'missing') throw notFound(['path', 'execution_uuid'], 'execution');
    if (result.kind === 'conflict') throw new HttpError(409, [{ loc: ['path', 'execution_uuid'], msg: `execution is ${result.current}; it cannot become ${to}`, type: 'conflict' }]);
    logger.info({ executionId: id, status: result.execution.status }, 'execution status reported');
    return result.execution;
  };

  /** The execution, when it waits for a person now; 409 (logged) when it does not. */
  const waitingExecution = async (id: string, what: string): Promise<ExecutionRow> => {
    const execution = await store.getExecution(id);
    if (!execution) throw notFound(['path', 'execution_uuid'], 'execution');
    if (execution.status !== 'waiting' || !execution.waiting) {
      logger.info({ executionId: id, status: execution.status }, `${what} ignored: the execution is not waiting for a person`);
      throw new HttpError(409, [{ loc: ['path', 'execution_uuid'], msg: `execution is ${execution.status}; only an execution that waits for a person takes ${what}`, type: 'conflict' }]);
    }
    return execution;
  };

  /**
   * Adds an entry to the execution's answers stream and sets the stream to expire a grace after
   * the question's deadline (docs/human-in-the-loop.md#the-answers-stream), in one step: a stream
   * is never left without an expiry by a write that half happened.
   */
  const append = async (execution: ExecutionRow, field: 'answer' | 'input', value: string): Promise<string> => {
    const key = streamKey(execution.execution_uuid);
    const results = await redis
      .multi()
      .xadd(key, 'MAXLEN', '~', String(STREAM_MAX_LENGTH), '*', field, value)
      .pexpire(key, answersStreamTtlMs(execution.waiting?.timeoutAt, Date.now()))
      .exec();
    const failed = results?.find(([error]) => error);
    if (!results || failed) throw failed?.[0] ?? new Error('the answers stream could not be written');
    return results[0]![1] as string;
  };

  app.post('/api/executions/:execution_uuid/waiting', {
    config: WORKER_REPORT,
    schema: reportSchema('Report that the run waits for a person', waitingReportAccepted, 'running → waiting, with the question. Repeating it with the same waitingAt answers 200 unchanged.'),
  }, async ({ params, body }) => {
    const waiting = { kind: body.kind, question: body.question, choices: body.choices ?? null, waitingAt: body.waitingAt, timeoutAt: body.timeoutAt ?? null };
    return move(params.execution_uuid, ['running'], 'waiting', { waiting, waiting_at: body.waitingAt }, 'waiting_at');
  });

  app.post('/api/executions/:execution_uuid/resumed', {
    config: WORKER_REPORT,
    schema: reportSchema('Report that a person answered', resumedReportAccepted, 'waiting → running. Repeating it with the same resumedAt answers 200 unchanged.'),
  }, async ({ params, body }) => {
    return move(params.execution_uuid, ['waiting'], 'running', { waiting: null, resumed_at: body.resumedAt, answered_by: body.answeredBy ?? null }, 'resumed_at');
  });

  app.post('/api/executions/:execution_uuid/answer', {
    config: OPERATOR,
    schema: humanSchema(
      'Answer the question of a waiting execution',
      answerRequest,
      "Written to the execution's answers stream for the worker, under the signed-in identity. An approval is granted only by `\"decision\": \"approve\"` (or the answer `approve`). The first answer to a question is taken; another answers 409, as does an execution that is not waiting.",
      answerTaken,
    ),
  }, async (request, reply) => {
    const { body } = request;
    // Who answers is who signed in; a `by` in the body is no one's word.
    const by = answererOf(request.credential);
    const id = request.params.execution_uuid;
    if (body.answer === undefined && body.decision === undefined) throw new HttpError(422, [{ loc: ['body', 'answer'], msg: 'give an answer, a decision ("approve" or "deny"), or both', type: 'missing' }]);
    const execution = await waitingExecution(id, 'an answer');
    const waiting = execution.waiting!;
    if (body.decision !== undefined && waiting.kind !== 'approval') {
      throw new HttpError(422, [{ loc: ['body', 'decision'], msg: `a decision answers an approval; this execution asks a ${waiting.kind}: send an answer`, type: 'invalid' }]);
    }
    // One answer per question: the first one sets the mark, a later one is refused.
    const mark = `${deps.keyPrefix}answered:${id}:${waiting.waitingAt}`;
    if ((await redis.set(mark, '1', 'PX', ANSWERED_TTL_MS, 'NX')) !== 'OK') {
      logger.info({ executionId: id }, 'an answer ignored: the question was already answered');
      throw new HttpError(409, [{ loc: ['path', 'execution_uuid'], msg: 'this question was already answered', type: 'conflict' }]);
    }
    const entry = await append(execution, 'answer', answerField({ answer: body.answer, decision: body.decision, by })).catch(async (error: unknown) => {
      // Not written: the question stays open for another try (a mark left behind expires with ANSWERED_TTL_MS).
      await redis.del(mark).catch((cleanup: unknown) => logger.warn({ executionId: id, err: cleanup }, 'could not reopen the question after a failed answer'));
      throw error;
    });
    logger.info({ executionId: id, by, decision: body.decision ?? null }, 'answer written');
    return reply.code(202).send({ execution_uuid: id, entry });
  });

  app.post('/api/executions/:execution_uuid/input', {
    config: OPERATOR,
    schema: humanSchema(
      "A person's input for the page of a waiting execution (takeover)",
      liveInputRequest,
      "A click, pointer move, wheel, key or text, passed to the execution's page in the order sent. Typed text is never logged. 409 unless the execution waits.",
      inputTaken,
    ),
  }, async (request, reply) => {
    const { body } = request;
    const id = request.params.execution_uuid;
    const execution = await waitingExecution(id, 'input');
    // The stream entry the worker reads: the body with what its kind needs (the schema checked the ranges).
    const input = humanInput.safeParse(body);
    if (!input.success) throw new HttpError(422, [{ loc: ['body'], msg: `${body.kind} needs ${body.kind === 'key' ? 'key' : body.kind === 'text' ? 'text' : 'x and y'}`, type: 'missing' }]);
    await append(execution, 'input', JSON.stringify(input.data));
    return reply.code(202).send({ execution_uuid: id });
  });
}

/**
 * Who answers: the identity the request signed in with, as the access check found it, never a
 * field the caller writes. A key's tag names it (a digest of the key, never the key); a dashboard
 * session is its key's. No credential, no answer: a route reached without one refuses.
 */
export function answererOf(credential: Credential | null | undefined): string {
  if (credential?.kind === 'key' || credential?.kind === 'session') return credential.identity;
  throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'an answer needs a signed-in identity', type: 'unauthorized' }]);
}
