import type { BetaOutputConfig } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { sameFamily } from './tool-versions.js';
import type { TaskBudget } from './types.js';

/**
 * The API's task budgets (docs/model.md#task-budgets): the model is told how many tokens its
 * whole run has and counts down as it goes, so it can pace itself and finish before the run's
 * budget ends it. Advisory: the worker still stops the run itself at the cap.
 *
 * Which models take one comes from the task budgets page's list of supported models (read on
 * 2026-11-26): the Models API does not say (the capabilities of @anthropic-ai/sdk 1.12.0's
 * `ModelInfo` have no such field), and ANTHROPIC_MODEL_CAPABILITIES can state `taskBudget` for
 * an id the list does not name. A total under 20,000 tokens is an error of the API: such a
 * budget is told to the model in words only (the system prompt says it to every model).
 */

export const TASK_BUDGET_BETA = 'task-budgets-2026-03-13';

/** The smallest `total` the API takes. */
export const TASK_BUDGET_MIN_TOTAL = 20_000;

/** Families the task budgets page lists, matched like the model table's. */
const TASK_BUDGET_FAMILIES = [
  'claude-fable-5-1',
  'claude-mythos-5-1',
  'claude-fable-5',
  'claude-mythos-5',
  'claude-opus-5-5',
  'claude-opus-5',
  'claude-opus-4-8',
  'claude-opus-4-7',
  'claude-sonnet-5-5',
  'claude-haiku-5-5',
];

/** Whether the table says the model takes a task budget. */
export function tableTaskBudget(model: string): boolean {
  const id = model.trim().toLowerCase();
  return TASK_BUDGET_FAMILIES.some((family) => sameFamily(id, family));
}

/** The request's `output_config` and beta for its budget, or nothing where the model or the size rules one out. */
export function taskBudgetParams(caps: { taskBudget: boolean }, budget: TaskBudget | undefined): { output_config?: BetaOutputConfig; betas: string[] } {
  if (!budget || !caps.taskBudget || budget.total < TASK_BUDGET_MIN_TOTAL) return { betas: [] };
  const remaining = Math.max(0, Math.min(budget.total, Math.floor(budget.remaining)));
  return { output_config: { task_budget: { type: 'tokens', total: Math.floor(budget.total), remaining } }, betas: [TASK_BUDGET_BETA] };
}
