/**
 * Where each model is in its life (docs/model.md#retired-and-deprecated-models): retired models
 * are refused before a run starts (the API would answer every request with an error), deprecated
 * ones run and are logged with their end of life. Matched by family like the model table
 * (tool-versions.ts), so dated ids and `-latest` aliases share their family's dates.
 *
 * Source: the SDK's list of deprecated models (`@anthropic-ai/sdk` internal/data/deprecated-models,
 * read in 1.12.0 and 1.15.0: Sonnet 4.5 "November 30th, 2026" in 1.12.0 and gone from 1.15.0's
 * models; Opus 4.5 "January 22nd, 2027"; Mythos Preview "June 30th, 2026") and Anthropic's
 * model deprecations page and release notes for the earlier retirements (Sonnet 4 and Opus 4 on
 * 2026-06-15, Opus 4.1 on 2026-08-05, Claude Sonnet 3.7 on 2026-02-19, Sonnet 3.5 on 2025-10-28).
 * A model whose end of life has passed is retired, whichever list it is on.
 */
import { sameFamily } from './tool-versions.js';

/** Model family → the day it stops answering (YYYY-MM-DD, UTC). */
export const END_OF_LIFE: ReadonlyArray<readonly [family: string, endOfLife: string]> = [
  ['claude-opus-4-5', '2027-01-22'],
  ['claude-sonnet-4-5', '2026-11-30'],
  ['claude-mythos-preview', '2026-06-30'],
  ['claude-opus-4-1', '2026-08-05'],
  ['claude-opus-4-0', '2026-06-15'],
  ['claude-sonnet-4-0', '2026-06-15'],
  ['claude-3-7-sonnet', '2026-02-19'],
  ['claude-3-5-sonnet', '2025-10-28'],
];

/** `claude-opus-4-20250514` / `claude-sonnet-4-20250514`: the original Claude 4 models. */
const CLAUDE_4_DATED = /^claude-(opus|sonnet)-4(-\d{8})?$/;

export type ModelLifecycle = { status: 'active' } | { status: 'deprecated'; endOfLife: string } | { status: 'retired'; retiredOn: string };

export function modelLifecycle(model: string, now: number): ModelLifecycle {
  const id = model.trim().toLowerCase();
  const date = CLAUDE_4_DATED.test(id) ? '2026-06-15' : END_OF_LIFE.find(([family]) => sameFamily(id, family))?.[1];
  if (date === undefined) return { status: 'active' };
  return Date.parse(`${date}T00:00:00Z`) <= now ? { status: 'retired', retiredOn: date } : { status: 'deprecated', endOfLife: date };
}

/** Why a retired model is refused: the message of the run's `invalid_specification`. */
export function retiredReason(model: string, retiredOn: string): string {
  return `the model ${model} was retired on ${retiredOn} (docs/model.md#retired-and-deprecated-models): the API refuses every request to it; use a current model`;
}
