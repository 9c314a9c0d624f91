import { z } from 'zod';
import { checkAllowEntry } from './allow-list.js';
import { ExecutionError } from './errors.js';
import { profileIdProblem } from './profile-crypto.js';

/** A workflow version's specification (contract §3), normalised to camelCase. */
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
  /** The agent's action space (contract §10): default `browser` where the model supports it. */
  toolset?: 'browser' | 'computer';
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

const specificationSchema = z.object({
  prompt: z.string().trim().min(1, 'must be a non-empty string'),
  allowedDomains: z
    .array(
      z.string().trim().superRefine((entry, ctx) => {
        const checked = checkAllowEntry(entry);
        if (!checked.ok) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} ${checked.reason}` });
      }),
    )
    .min(1, 'must list at least one domain'),
  startUrl: z.string().min(1).optional(),
  payloadSchema: jsonSchema.optional(),
  outputSchema: jsonSchema.optional(),
  steps: z.array(z.string()).optional(),
  maxSteps: z.number().int().positive().max(10_000).optional(),
  timeoutMs: z.number().int().positive().optional(),
  model: z.string().min(1).optional(),
  toolset: z.enum(['browser', 'computer'], { message: 'must be "browser" or "computer"' }).optional(),
  allowJavascript: z.boolean({ message: 'must be true or false' }).optional(),
  cache: z.boolean({ message: 'must be true or false' }).optional(),
  approvals: z.array(z.string().trim().min(1, 'must not be empty')).optional(),
  humanTimeoutMs: z.number().int().min(0).max(30 * 86_400_000).optional(),
  profile: z
    .string({ message: 'must be a string' })
    .superRefine((id, ctx) => {
      const problem = profileIdProblem(id);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
});

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
