/**
 * Executions on the local API (docs/api.md): the body that creates one, the execution as the API
 * keeps and answers it (the service description's fields and the worker's reports' results), the
 * list's query, and what the worker reads of an execution from any operator's API.
 */
import { z } from 'zod';
import { boundedJsonValue, count, isoTime } from './json.js';
import { listOf, pageQuery } from './lists.js';
import { reportedError, waitingReport } from './reports.js';
import { TRIGGER_TYPES } from './workflows.js';
import { MAX_DEPTH } from './json-bounds.js';

export const EXECUTION_STATUSES = ['queued', 'running', 'waiting', 'completed', 'failed'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/**
 * `POST /api/workflows/{workflowId}/execute`. A field it does not know is refused: a misspelt
 * input would otherwise run the version's default input instead of the caller's.
 */
export const executeRequest = z
  .strictObject({
    inputPayload: boundedJsonValue.meta({ description: `Any JSON value, at most ${MAX_DEPTH} levels deep; validated against the version's payloadSchema.` }).optional(),
    workflowVersionId: z
      .string()
      .min(1)
      .max(200)
      .meta({ description: "The version to run, a draft included (to try it before publishing it); without it, the newest published version (the one whose `runs_by_default` is true)." })
      .optional(),
  })
  .meta({ description: '`input_payload` and `workflow_version_id` are accepted too.' });
/** The snake_case spellings an execute body may use. */
export const EXECUTE_ALIASES: Readonly<Record<string, string>> = { input_payload: 'inputPayload', workflow_version_id: 'workflowVersionId' };

export const execution = z.object({
  execution_uuid: z.string(),
  workflow_version_uuid: z.string(),
  workflow_uuid: z.string(),
  workflow_name: z.string(),
  version: z.number().int().meta({ description: 'Number of the version run.' }),
  created_at: isoTime,
  updated_at: isoTime,
  status: z
    .enum(EXECUTION_STATUSES)
    .meta({ description: 'queued → running → completed | failed; queued → failed; running ⇄ waiting while the agent waits for a person.' }),
  /** What created it: an API call (`manual`) or its version's schedule. */
  trigger: z.enum(TRIGGER_TYPES).meta({ description: "What created it: an execute call, or its version's schedule." }),
  input_payload: z.unknown().meta({ description: 'Any JSON value; null when none was given.' }),
  duration_ms: count.nullable().meta({ description: 'null until the run ends.' }),
  n_steps: count,
  n_agent_actions: count,
  n_screenshots: count,
  output_url: z.string().nullable(),
  video_url: z.string().nullable(),
  logs_url: z.string().nullable(),
  started_at: isoTime.nullable(),
  completed_at: isoTime.nullable(),
  failed_at: isoTime.nullable(),
  error: reportedError.nullable(),
  /** The run's estimated model cost, from its output.json when it ended (docs/api.md#cost); absent in rows stored before costs were kept. */
  cost_usd: z
    .number()
    .min(0)
    .nullable()
    .meta({ description: "The run's estimated model cost in US dollars, each model at its own prices (output.json usage.estimatedCostUsd); null until it ends, or when its output.json cannot be read." })
    .optional(),
  /** While the run waits for a person: what it asks (docs/human-in-the-loop.md). */
  waiting: waitingReport.nullable().meta({ description: 'While the status is waiting: what the agent asks a person.' }).optional(),
  /** When the run last waited for a person, and who answered. */
  waiting_at: isoTime.nullable().meta({ description: 'When the run last started waiting for a person.' }).optional(),
  resumed_at: isoTime.nullable().meta({ description: 'When a person last answered.' }).optional(),
  answered_by: z.string().nullable().optional(),
});
export type ExecutionRow = z.infer<typeof execution>;

export const executionList = listOf(execution);
export type ExecutionList = z.infer<typeof executionList>;

/** `GET /api/executions`: a page, of one workflow's executions and of one status when asked. */
export const executionQuery = pageQuery.extend({
  workflow_uuid: z.string().meta({ description: 'Only executions of this workflow (`workflowId` is accepted too).' }).optional(),
  status: z.enum(EXECUTION_STATUSES).optional(),
});

/**
 * An execution as the worker reads it from any operator's API (the service description's
 * Execution, whose nullability it leaves open): the fields the worker uses.
 */
export const executionReading = z.looseObject({
  execution_uuid: z.string(),
  workflow_uuid: z.string().nullish(),
  workflow_version_uuid: z.string().nullish(),
  status: z.string().nullish(),
  input_payload: z.unknown().optional(),
});
export type ExecutionReading = z.infer<typeof executionReading>;
