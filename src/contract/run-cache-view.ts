/**
 * `GET /api/workflows/{id}/versions/{versionId}/cache` (docs/api.md#run-cache): a version's run
 * cache as an operator or an auditor reads it — each cached step, each action with its element,
 * where each value it enters comes from (its binding), its effect when the cache keeps one, and
 * what the last repair changed. Input paths are written as the model writes names, without the
 * braces (`customer.name`, `totals["U.S. total"]`).
 */
import { z } from 'zod';
import { cachedElement, derivation } from './run-cache.js';

/** Where a value of the action comes from (docs/run-cache.md#sources); `guarded` when it has no source. */
export const bindingView = z.discriminatedUnion('kind', [
  /** Input values entered by name. */
  z.object({ kind: z.literal('input'), at: z.string(), paths: z.array(z.string()) }),
  /** Text of the version's prompt or steps. */
  z.object({ kind: z.literal('constant'), at: z.string(), text: z.string() }),
  /** One derivation of one input value. */
  z.object({ kind: z.literal('derived'), at: z.string(), path: z.string(), derivation }),
  /** The element is found by this name over the input, `{{path}}` for each value: `Invoice #{{number}} from {{vendor}}`. */
  z.object({ kind: z.literal('pattern'), at: z.literal('target'), pattern: z.string() }),
  /** Input files, by their input paths. */
  z.object({ kind: z.literal('file'), at: z.literal('paths'), paths: z.array(z.string()) }),
  /** No source: replayed only while the input is the same at `paths` as in the cached run (`why`: literal, derived, toggle, named). */
  z.object({ kind: z.literal('guarded'), at: z.string(), why: z.string(), paths: z.array(z.string()), from: z.array(z.string()) }),
]);
export type BindingView = z.infer<typeof bindingView>;

export const cachedActionView = z.object({
  /** The action (`left_click`, `type`, `form_input`, `file_upload`, …) and the tool it is of. */
  action: z.string(),
  tool: z.string(),
  /** The page it acted on: origin, path and query parameter names. */
  page: z.string(),
  /** What the model gave it, values by name, secrets as their placeholders; a key a derived or file source stands for is absent. */
  input: z.record(z.string(), z.unknown()),
  /** The element it acted on, and the focused one for typing, as the cached run saw them. */
  element: cachedElement.nullable(),
  focus: cachedElement.nullable(),
  bindings: z.array(bindingView),
  /** The state it brought about, when the cache keeps one (docs/run-cache.md): as the entry holds it. */
  effect: z.unknown().optional(),
  /** Made by the last repair, in place of the cached actions it stood in for. */
  by_repair: z.boolean(),
});
export type CachedActionView = z.infer<typeof cachedActionView>;

export const runCacheView = z.object({
  version_id: z.string(),
  format: z.string(),
  tool_type: z.string(),
  created_at: z.string(),
  source_execution_id: z.string(),
  /** The cached steps in order, each the actions of one model turn. */
  steps: z.array(z.object({ step: z.number().int().min(1), actions: z.array(cachedActionView) })),
  /** Input paths the pages no longer ask for. */
  not_asked: z.array(z.string()),
  /** What the repairs of the run that wrote the cache changed: the earlier cache's step, why, its actions and the repair's. */
  last_repair: z.array(z.object({ cached_step: z.number().int().min(1), reason: z.string(), before: z.array(z.string()), after: z.array(z.string()) })),
});
export type RunCacheView = z.infer<typeof runCacheView>;
