import { z } from 'zod';
import { ACTION_SPACE_KINDS, type ActionSpaceKind } from './action-spaces.js';
import { checkAllowEntry } from './allow-list.js';
import { ExecutionError } from './errors.js';
import { profileIdProblem } from './profile-crypto.js';

/** A workflow version's specification (docs/specification.md#fields), normalised to camelCase. */
export interface Specification {
  prompt: string;
  allowedDomains: string[];
  startUrl?: string;
  payloadSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  steps?: string[];
  maxSteps?: number;
  timeoutMs?: number;
  model?: string;
  /** The agent's action space (docs/action-spaces.md): default `browser` where the model supports it. */
  toolset?: ActionSpaceKind;
  /** Enables the browser toolset's `javascript_exec` (default false). */
  allowJavascript?: boolean;
  /** Use and update this version's run cache (default true). */
  cache?: boolean;
  /** Actions, in words, that need a person's approval first (docs/human-in-the-loop.md). */
  approvals?: string[];
  /** How long the run may wait for a person; 0: the agent cannot ask (default HUMAN_TIMEOUT_MS). */
  humanTimeoutMs?: number;
  /** The browser profile the run signs in with and keeps its sign-in in (docs/profiles.md). */
  profile?: string;
  /**
   * The run's cap on model tokens (as billed) and on their estimated cost in USD
   * (docs/specification.md#budget); each defaults to RUN_BUDGET_TOKENS / RUN_BUDGET_USD.
   */
  budget?: { tokens?: number; usd?: number };
}

export type JsonSchema = Record<string, unknown> | boolean;

/** snake_case spellings the contract accepts, mapped to the camelCase field. */
const SNAKE_TO_CAMEL: Record<string, keyof Specification> = {
  allowed_domains: 'allowedDomains',
  start_url: 'startUrl',
  payload_schema: 'payloadSchema',
  output_schema: 'outputSchema',
  max_steps: 'maxSteps',
  timeout_ms: 'timeoutMs',
  tool_set: 'toolset',
  allow_javascript: 'allowJavascript',
  human_timeout_ms: 'humanTimeoutMs',
};

/**
 * The fields of `raw` under their camelCase names; an explicit camelCase field wins over its
 * snake_case twin. `aliases` maps snake_case to camelCase (default: the specification's fields).
 */
export function camelCaseFields(raw: Record<string, unknown>, aliases: Readonly<Record<string, string>> = SNAKE_TO_CAMEL): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const camel = aliases[key] ?? key;
    if (camel !== key && camel in raw) continue;
    out[camel] = value;
  }
  return out;
}

const jsonSchema = z.union([z.record(z.string(), z.unknown()), z.boolean()]);

/**
 * The one definition of a specification's fields: the worker parses with it, and the local API
 * validates requests with its JSON Schema (`specificationJsonSchema`, published in the OpenAPI
 * document). `meta` carries what only the JSON Schema says: descriptions, and the checks the
 * refinements make written as JSON Schema (`format`, `pattern`, `x-allow-list-entry`, which the
 * API's Ajv runs through the same allow-list parser).
 */
const specificationSchema = z.object({
  prompt: z.string().trim().min(1, 'must be a non-empty string').regex(/\S/, 'must be a non-empty string').meta({ description: 'The business process, in words.' }),
  allowedDomains: z
    .array(
      z
        .string()
        .trim()
        .min(1)
        .max(260)
        .regex(/^[^\s/?#@]+$/, 'must be a host, a host:port or *.host')
        .superRefine((entry, ctx) => {
          const checked = checkAllowEntry(entry);
          if (!checked.ok) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} ${checked.reason}` });
        })
        .meta({ 'x-allow-list-entry': true }),
    )
    .min(1, 'must list at least one domain')
    .meta({
      description:
        'Hosts the browser may reach: `example.com` (any port), `example.com:8443` (that port only), or `*.example.com` for it and its subdomains; never a wildcard on a public suffix (`*.com`, `*.co.uk`).',
    }),
  startUrl: z.string().min(1).meta({ format: 'uri', description: 'First page; must be allowed.' }).optional(),
  payloadSchema: jsonSchema.meta({ description: 'JSON Schema of the input payload.' }).optional(),
  outputSchema: jsonSchema.meta({ description: "JSON Schema of the agent's output." }).optional(),
  steps: z.array(z.string()).meta({ description: 'Ordered checklist completing the process.' }).optional(),
  maxSteps: z.number().int().min(1).max(10_000).optional(),
  timeoutMs: z.number().int().min(1).optional(),
  model: z.string().min(1).optional(),
  toolset: z
    .enum(ACTION_SPACE_KINDS, { message: `must be ${ACTION_SPACE_KINDS.map((kind) => `"${kind}"`).join(' or ')}` })
    .meta({ description: "The agent's action space: the browser toolset (default where the model supports it) or computer use." })
    .optional(),
  allowJavascript: z.boolean({ message: 'must be true or false' }).meta({ description: "Enables the browser toolset's javascript_exec (default false)." }).optional(),
  cache: z.boolean({ message: 'must be true or false' }).meta({ description: "Use and update this version's run cache (default true)." }).optional(),
  approvals: z.array(z.string().trim().min(1, 'must not be empty')).meta({ description: "Actions, in words, that need a person's approval before the agent takes them." }).optional(),
  humanTimeoutMs: z
    .number()
    .int()
    .min(0)
    .max(30 * 86_400_000)
    .meta({ description: 'How long a run may wait for a person (default HUMAN_TIMEOUT_MS; 0: the agent cannot ask).' })
    .optional(),
  profile: z
    .string({ message: 'must be a string' })
    .superRefine((id, ctx) => {
      const problem = profileIdProblem(id);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({ pattern: '^[A-Za-z0-9._-]{1,128}$', not: { enum: ['.', '..'] }, description: 'The browser profile the run signs in with and keeps its sign-in in (docs/profiles.md).' })
    .optional(),
  // Strict: a misspelt cap (`dollars`, `max_usd`) is refused rather than left out, which would
  // leave the run uncapped.
  budget: z
    .object({
      tokens: z.number().int('must be a whole number').min(1).meta({ description: 'Cap on model tokens as the API bills them: input, output, cache reads and cache writes.' }).optional(),
      usd: z.number().positive('must be more than 0').meta({ description: "Cap on those tokens' estimated cost, in USD, at each model's prices." }).optional(),
    })
    .strict()
    .meta({ description: 'The run\'s budget (default RUN_BUDGET_TOKENS / RUN_BUDGET_USD); reaching either cap fails the run with budget_exceeded, and no further model request is sent.' })
    .optional(),
});

/**
 * The specification's fields as JSON Schema (draft 07, as requests are read): generated from the
 * zod schema above, so the API and the worker accept the same fields.
 */
export function specificationJsonSchema(): { properties: Record<string, Record<string, unknown>>; required: string[] } {
  const generated = z.toJSONSchema(specificationSchema, {
    target: 'draft-7',
    io: 'input',
    // A JSON Schema given inside a specification (the only union here) is an object or a
    // boolean: one type list, so a wrong value reports one fault rather than one per member.
    override: (ctx) => {
      if (ctx.zodSchema._zod.def.type !== 'union') return;
      const target = ctx.jsonSchema as Record<string, unknown>;
      for (const key of Object.keys(target)) if (key !== 'description') delete target[key];
      target.type = ['object', 'boolean'];
    },
  }) as { properties: Record<string, Record<string, unknown>>; required: string[] };
  return { properties: generated.properties, required: generated.required };
}

/**
 * Validates a specification as received (from the job or the API) and normalises its field
 * names. Throws `invalid_specification` naming every faulty field.
 */
export function parseSpecification(raw: unknown): Specification {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ExecutionError('invalid_specification', 'the specification must be a JSON object');
  }
  const normalised = Object.fromEntries(Object.entries(camelCaseFields(raw as Record<string, unknown>)).filter(([, value]) => value !== null));
  const parsed = specificationSchema.safeParse(normalised);
  if (!parsed.success) {
    throw new ExecutionError('invalid_specification', `invalid specification: ${formatIssues(parsed.error.issues)}`);
  }
  const spec: Specification = stripUndefined(parsed.data);
  return spec;
}

export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
