/**
 * A workflow version's specification (docs/specification.md#fields), declared once: the worker
 * parses with it (domain/specification.ts), the local API validates workflow requests with it and
 * publishes its JSON Schema in the OpenAPI document, so the API never stores a specification a
 * worker would refuse. `meta` carries what only the JSON Schema says: descriptions, and the checks
 * the refinements make written as JSON Schema (`pattern`, `format`, `x-allow-list-entry`).
 */
import { z } from 'zod';
import { checkAllowEntry } from './allow-list.js';
import { camelCaseFields, formatIssues, jsonSchemaValue, snakeCaseAliases } from './json.js';
import { profileId } from './profile.js';
import { MAX_DEPTH } from './json-bounds.js';

/** The specification's `toolset`: the browser toolset, or computer use (docs/action-spaces.md). */
export const TOOLSETS = ['browser', 'computer'] as const;

/**
 * One allow-list entry, checked by the worker's own parser (contract/allow-list.ts); the spaces
 * around it are dropped (the JSON Schema's pattern says they may be there).
 */
const allowEntry = z
  .string()
  .trim()
  .min(1)
  .max(260)
  .regex(/^[^\s/?#@]+$/, 'must be a host, a host:port or *.host')
  .superRefine((entry, ctx) => {
    const checked = checkAllowEntry(entry);
    if (!checked.ok) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} ${checked.reason}`, params: { keyword: 'x-allow-list-entry' } });
  })
  .meta({ pattern: '^\\s*[^\\s/?#@]+\\s*$', 'x-allow-list-entry': true });

const specificationShape = {
  prompt: z.string().trim().min(1, 'must be a non-empty string').regex(/\S/, 'must be a non-empty string').meta({ description: 'The business process, in words.' }),
  allowedDomains: z
    .array(allowEntry)
    .min(1, 'must list at least one domain')
    .meta({
      description:
        'Hosts the browser may reach: `example.com` (any port), `example.com:8443` (that port only), or `*.example.com` for it and its subdomains; never a wildcard on a public suffix (`*.com`, `*.co.uk`).',
    }),
  startUrl: z
    .string()
    .min(1)
    // An http(s) URL with no white space: the URL parser trims spaces away and takes any scheme (" shop.test:8443 " reads as scheme "shop.test"), which no browser run can start on.
    .regex(/^[Hh][Tt][Tt][Pp][Ss]?:\/\/\S+$/, { message: 'must be an http or https URL without spaces' })
    .refine((url) => URL.canParse(url), { message: 'must be an absolute URL', params: { keyword: 'format' } })
    .meta({ format: 'uri', description: 'First page; must be allowed.' })
    .optional(),
  payloadSchema: jsonSchemaValue.meta({ description: `JSON Schema of the input payload; at most ${MAX_DEPTH} levels deep.` }).optional(),
  outputSchema: jsonSchemaValue.meta({ description: `JSON Schema of the agent's output; at most ${MAX_DEPTH} levels deep.` }).optional(),
  steps: z.array(z.string()).meta({ description: 'Ordered checklist completing the process.' }).optional(),
  maxSteps: z.number().int().min(1).max(10_000).optional(),
  timeoutMs: z.number().int().min(1).optional(),
  model: z.string().min(1).optional(),
  toolset: z
    .enum(TOOLSETS, { message: `must be ${TOOLSETS.map((kind) => `"${kind}"`).join(' or ')}` })
    .meta({ description: "The agent's action space: the browser toolset (default where the model supports it) or computer use." })
    .optional(),
  allowJavascript: z.boolean({ message: 'must be true or false' }).meta({ description: "Enables the browser toolset's javascript_exec (default false)." }).optional(),
  cache: z.boolean({ message: 'must be true or false' }).meta({ description: "Use and update this version's run cache (default true)." }).optional(),
  approvals: z.array(z.string().trim().min(1, 'must not be empty').regex(/\S/, 'must not be empty')).meta({ description: "Actions, in words, that need a person's approval before the agent takes them." }).optional(),
  humanTimeoutMs: z
    .number()
    .int()
    .min(0)
    .max(30 * 86_400_000)
    .meta({ description: 'How long a run may wait for a person (default HUMAN_TIMEOUT_MS; 0: the agent cannot ask).' })
    .optional(),
  profile: profileId.meta({ description: 'The browser profile the run signs in with and keeps its sign-in in (docs/profiles.md).' }).optional(),
  // Strict: a misspelt cap (`dollars`, `max_usd`) is refused rather than left out, which would
  // leave the run uncapped.
  budget: z
    .object({
      tokens: z.number().int('must be a whole number').min(1).meta({ description: 'Cap on model tokens as the API bills them: input, output, cache reads and cache writes.' }).optional(),
      usd: z.number().positive('must be more than 0').meta({ description: "Cap on those tokens' estimated cost, in USD, at each model's prices." }).optional(),
    })
    .strict()
    .meta({ description: "The run's budget (docs/specification.md#budget; default RUN_BUDGET_TOKENS / RUN_BUDGET_USD); reaching either cap fails the run with budget_exceeded, and no further model request is sent." })
    .optional(),
};

/** The specification, camelCase: what the worker runs and the API stores. */
export const specification = z.object(specificationShape).meta({ description: 'The specification fields of docs/specification.md, camelCase (snake_case aliases accepted).' });
export type Specification = z.infer<typeof specification>;

/** The specification's fields, in the order of the table. */
export const SPECIFICATION_FIELDS = Object.keys(specificationShape) as (keyof Specification)[];
/** The fields a specification must have; every other one may be left out (or removed by an edit). */
export const REQUIRED_SPECIFICATION_FIELDS: readonly (keyof Specification)[] = ['prompt', 'allowedDomains'];

/** snake_case spellings accepted too: each field's own, and `tool_set`. */
export const SPECIFICATION_ALIASES = snakeCaseAliases(SPECIFICATION_FIELDS, { tool_set: 'toolset' });

export type SpecificationReading = { ok: true; specification: Specification } | { ok: false; reason: string };

/**
 * A specification as received (from a job, the API or a file): field names made camelCase, a
 * field set to null taken as absent, then checked. The reason names every faulty field.
 */
export function readSpecification(raw: unknown): SpecificationReading {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, reason: 'the specification must be a JSON object' };
  const fields = camelCaseFields(raw as Record<string, unknown>, SPECIFICATION_ALIASES);
  for (const [key, value] of Object.entries(fields)) if (value === null) delete fields[key];
  const parsed = specification.safeParse(fields);
  return parsed.success ? { ok: true, specification: parsed.data } : { ok: false, reason: `invalid specification: ${formatIssues(parsed.error.issues)}` };
}
