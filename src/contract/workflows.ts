/**
 * Workflows and their versions on the local API (docs/api.md): the bodies that create and edit a
 * workflow, the rows the API keeps, the answers it gives, and what the worker reads of the
 * versions list of any operator's API (the service description's shape).
 */
import { z } from 'zod';
import { boundedJsonObject, count, isoTime, jsonObject, keyPath, snakeCaseAliases } from './json.js';
import { listOf } from './lists.js';
import { SPECIFICATION_ALIASES, SPECIFICATION_FIELDS, specification } from './specification.js';
import { MAX_DEPTH } from './json-bounds.js';

export const VERSION_STATUSES = ['published', 'draft'] as const;
export type VersionStatus = (typeof VERSION_STATUSES)[number];
export const TRIGGER_TYPES = ['manual', 'schedule'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/** How a version is run (docs/api.md#triggers), as a request gives it. */
const triggerRequestShape = {
  status: z
    .enum(VERSION_STATUSES)
    .meta({ description: 'Status of the new version: `published` (default) or `draft`. A draft runs only when an execute call names it; publish it with POST …/versions/{versionId}/publish to make it the default.' }),
  triggerType: z
    .enum(TRIGGER_TYPES)
    .meta({ description: '`manual` (default: executed by POST …/execute) or `schedule` (also executed on each tick of scheduleExpression while it is the newest published version).' }),
  scheduleExpression: z
    .string()
    .min(1)
    .max(200)
    .nullable()
    .meta({
      description:
        'Cron expression of a `schedule` version: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), or an @ macro, optionally preceded by `TZ=Area/City ` (default UTC). At most one run a minute.',
    }),
  configuration: boundedJsonObject
    .nullable()
    .meta({
      description: `Free-form object kept with the version, at most ${MAX_DEPTH} levels deep. \`configuration.inputPayload\` is the version's default input: scheduled runs use it, and so does an execute call without inputPayload.`,
    }),
};
const TRIGGER_FIELDS = Object.keys(triggerRequestShape) as (keyof typeof triggerRequestShape)[];
export const TRIGGER_ALIASES = snakeCaseAliases(TRIGGER_FIELDS);

/** Workflow-level fields: not stored on a version. */
const workflowFields = { name: z.string().min(1).max(200), description: z.string().max(10_000) };

const spellings = [...Object.keys(SPECIFICATION_ALIASES), ...Object.keys(TRIGGER_ALIASES)].join(', ');

/** `POST /api/workflows`: the workflow's fields, its first version's specification and trigger. */
export const workflowCreate = z
  .strictObject({
    name: workflowFields.name.optional(),
    description: workflowFields.description.optional(),
    ...specification.shape,
    ...z.object(triggerRequestShape).partial().shape,
  })
  .meta({ description: `snake_case spellings (${spellings}) are accepted too.` });
export type WorkflowCreate = z.infer<typeof workflowCreate>;

type Shape = typeof specification.shape;
/** An edit's specification fields: each optional; one the specification may lack is removed by null. */
type SpecificationEdit = { [K in keyof Shape]: Shape[K] extends z.ZodOptional<infer Inner> ? z.ZodOptional<z.ZodNullable<Inner>> : z.ZodOptional<Shape[K]> };
const specificationEdit = Object.fromEntries(
  SPECIFICATION_FIELDS.map((field) => {
    const schema: z.ZodType = specification.shape[field];
    return [field, schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodType).nullable().optional() : schema.optional()];
  }),
) as SpecificationEdit;

/**
 * `PATCH /api/workflows/{id}`: the edited fields only; the new version takes the others from the
 * current one. A field it does not know is refused (a misspelt field would otherwise be an edit
 * that silently changes nothing), and so is an empty body.
 */
export const workflowUpdate = z
  .strictObject({
    name: workflowFields.name.optional(),
    description: workflowFields.description.optional(),
    ...specificationEdit,
    ...z.object(triggerRequestShape).partial().shape,
  })
  .refine((body) => Object.keys(body).length > 0, { message: 'must NOT have fewer than 1 properties', params: { keyword: 'minProperties' } })
  .meta({ minProperties: 1, description: 'Edited fields only; an optional specification field sent as null is removed. snake_case spellings are accepted too.' });
/** The fields an edit may change. */
export const EDITABLE_FIELDS = ['name', 'description', ...SPECIFICATION_FIELDS, ...TRIGGER_FIELDS] as const;
export type WorkflowUpdate = z.infer<typeof workflowUpdate>;

/** A workflow as the API keeps it. */
export const storedWorkflow = z.object({
  workflow_uuid: z.string(),
  name: z.string(),
  description: z.string(),
  slug: z.string().meta({ description: 'Unique; derived from the name.' }),
  created_at: isoTime,
  updated_at: isoTime,
});
export type WorkflowRow = z.infer<typeof storedWorkflow>;

/** A version's trigger as the API keeps and answers it (docs/api.md#triggers). */
export const versionTrigger = z.object({
  /** `published` unless the version was created as a draft; a draft runs only when an execute call names it. */
  status: z.enum(VERSION_STATUSES).meta({ description: 'A draft runs only when an execute call names it (`workflowVersionId`); the newest published version runs by default.' }),
  trigger_type: z.enum(TRIGGER_TYPES),
  /** The cron expression of a `schedule` version; null for `manual`. */
  schedule_expression: z.string().nullable().meta({ description: 'Cron expression of a `schedule` version, as given; null for `manual`.' }),
  /** Free-form; `inputPayload` in it is the version's default input, kept with each secret as its placeholder (default-input.ts). */
  configuration: jsonObject.meta({ description: 'As given (`{}` when none was); secret fields of `inputPayload` are shown as their placeholder.' }),
  /**
   * The default input's secret values, sealed with PROFILE_KEYS; null when it has none. Absent on
   * versions stored before secrets were kept apart. Never answered.
   */
  input_secrets: z.string().nullable().optional(),
});
export type VersionTrigger = z.infer<typeof versionTrigger>;

/** What `input_secrets` holds once opened: each secret value of the default input, at its path. */
export const sealedInputSecrets = z.object({ secrets: z.array(z.object({ path: keyPath, value: z.unknown() })) });

/** A version as the API keeps it: its specification as it was stored. */
export const storedVersion = z.object({
  workflow_version_uuid: z.string(),
  workflow_uuid: z.string(),
  specification: jsonObject,
  version: z.number().int(),
  ...versionTrigger.shape,
  created_at: isoTime,
  updated_at: isoTime,
});
export type VersionRow = z.infer<typeof storedVersion>;

/** A version as the API answers it: the stored one (its sealed secrets left out), with what is known of it now. */
export const workflowVersion = storedVersion.omit({ input_secrets: true }).extend({
  specification,
  is_current: z.boolean().meta({ description: 'The newest version (the one an edit starts from), whatever its status.' }),
  runs_by_default: z
    .boolean()
    .meta({ description: 'The newest published version: what an execute call without workflowVersionId and the schedule run. At most one version has it; none when every version is a draft.' }),
  next_run_at: isoTime.nullable().meta({ description: "When the workflow's schedule fires next: on the version that runs by default when it has a schedule, else null." }),
  name: z.string().meta({ description: 'Workflow-level, not stored on the version.' }),
  description: z.string().meta({ description: 'Workflow-level, not stored on the version.' }),
});
export type WorkflowVersion = z.infer<typeof workflowVersion>;

/** A workflow as the API answers it: its fields, its current version and what its executions cost (docs/api.md#cost). */
export const workflow = storedWorkflow.extend({
  current_version: workflowVersion.nullable(),
  cost_usd: z.number().min(0).meta({ description: 'The estimated model cost of its executions together (those whose cost is known), in US dollars.' }),
  costed_executions: count.meta({ description: 'How many of its executions cost_usd adds up.' }),
});
export type Workflow = z.infer<typeof workflow>;

export const workflowList = listOf(workflow);
export type WorkflowList = z.infer<typeof workflowList>;
export const versionList = listOf(workflowVersion);
export type VersionList = z.infer<typeof versionList>;

/** `DELETE …/versions/{versionId}/cache`: whether there was a cache. */
export const cacheCleared = z.object({ cleared: z.boolean() });

/**
 * A version as the worker reads it from the versions list of any operator's API (the service
 * description's WorkflowVersion: its other fields may be missing or null).
 */
export const versionReading = z.looseObject({
  workflow_version_uuid: z.string(),
  workflow_uuid: z.string().nullish(),
  specification: z.unknown().optional(),
  version: z.number().int().nullish(),
  is_current: z.boolean().nullish(),
});
export type VersionReading = z.infer<typeof versionReading>;
export const versionListReading = z.object({ items: z.array(versionReading) });
