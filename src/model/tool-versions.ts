/**
 * Which action spaces a model speaks (docs/action-spaces.md), as Anthropic's tool documentation lists
 * them (the browser use tool and computer use tool pages, read in November 2026):
 *
 * - `browser_toolset_20260801` (the browser use tool; no beta header): "Supported models ·
 *   Fable 5 and 5.1 · Mythos 5 and 5.1 · Opus 4.8, 5, and 5.5 · Sonnet 5". Sonnet 5.5 and
 *   Haiku 5.5 are not on that page, though their own "what's new" pages say the tool works with
 *   them: they may ask for it, but it is not their default.
 * - `computer_toolset_20260801` (no beta header): the same models, and the only computer use
 *   tool of Claude 5.5 and later on the Claude API ("return an error for the earlier
 *   computer_20251124 tool version"): Sonnet 5.5 and Haiku 5.5 included.
 * - Fable 5.2 and Mythos 5.2 ("what's new in Claude Fable 5.2", 2026-11-09): the earlier
 *   `computer_20251124` "returns an error on every platform except Amazon Bedrock", so they take
 *   the computer toolset; none of the page's breaking changes concern the browser use tool, which
 *   they keep from Fable 5.1 / Mythos 5.1.
 * - `computer_20251124` (beta `computer-use-2025-11-24`, zoom behind `enable_zoom`): Opus 4.7,
 *   Opus 4.6, Sonnet 4.6 and Opus 4.5 ("support computer use only through the earlier
 *   computer_20251124 tool version").
 * - `computer_20250124` (beta `computer-use-2025-01-24`): Sonnet 4.5, Haiku 4.5, Opus 4.1,
 *   Sonnet 4, Opus 4.
 *
 * The computer toolset goes only to the models that require it (the 5.5 models); a model that
 * also takes `computer_20251124` keeps that version, as the specification's contract promises
 * (its one-action-per-call shape is what those workflows were written and recorded against).
 * Ids are matched by family, so dated ids and `-latest` aliases resolve like their
 * family, and another minor version (`claude-fable-5-3`) does not. An id the table does not know (a newer model, a
 * proxy's name) gets the newest generation's rules: the computer toolset, since every model
 * from 5.5 on requires it, and no browser default. What the Models API says of a model (its
 * context management, thinking) is learned at run time: capabilities.ts.
 */

import { computerTool, isToolsetType, type ActionSpaceKind, type ComputerTool } from '../domain/action-spaces.js';

/** How the browser use tool's documentation speaks of a model. */
export type BrowserSupport = 'documented' | 'model-page' | 'unknown' | 'no';

export interface ModelTools {
  /** The model's computer use tool. */
  computer: ComputerTool;
  browser: BrowserSupport;
  /** The largest screenshot the model takes (the API does not downscale toolset images). */
  images: { maxEdgePx: number; maxPixels: number };
}

const TOOLSET = computerTool('computer_toolset_20260801');
const V20251124 = computerTool('computer_20251124');
const V20250124 = computerTool('computer_20250124');

/**
 * Models that take the toolsets accept 2576 px and about 3.75 MP, but once a request holds more
 * than 20 images each must stay within 2000 px a side: 2000 px is the limit that always holds.
 * Earlier models: 1568 px on the long edge and about 1.15 MP.
 */
const LARGE_IMAGES = { maxEdgePx: 2000, maxPixels: 3_750_000 };
const SMALL_IMAGES = { maxEdgePx: 1568, maxPixels: 1_150_000 };

const row = (computer: ModelTools['computer'], browser: BrowserSupport): ModelTools => ({
  computer,
  browser,
  // The models that take the toolsets (Opus 4.8 and later) see large images with either computer tool.
  images: isToolsetType(computer.type) || browser !== 'no' ? LARGE_IMAGES : SMALL_IMAGES,
});

/** Model family → tools. */
export const MODEL_TABLE: ReadonlyArray<readonly [prefix: string, tools: ModelTools]> = [
  ['claude-fable-5-2', row(TOOLSET, 'documented')],
  ['claude-mythos-5-2', row(TOOLSET, 'documented')],
  ['claude-opus-5-5', row(TOOLSET, 'documented')],
  ['claude-sonnet-5-5', row(TOOLSET, 'model-page')],
  ['claude-haiku-5-5', row(TOOLSET, 'model-page')],
  ['claude-fable-5-1', row(V20251124, 'documented')],
  ['claude-mythos-5-1', row(V20251124, 'documented')],
  ['claude-fable-5', row(V20251124, 'documented')],
  ['claude-mythos-5', row(V20251124, 'documented')],
  ['claude-opus-5', row(V20251124, 'documented')],
  ['claude-sonnet-5', row(V20251124, 'documented')],
  ['claude-opus-4-8', row(V20251124, 'documented')],
  ['claude-opus-4-7', row(V20251124, 'no')],
  ['claude-opus-4-6', row(V20251124, 'no')],
  ['claude-sonnet-4-6', row(V20251124, 'no')],
  ['claude-opus-4-5', row(V20251124, 'no')],
  ['claude-sonnet-4-5', row(V20250124, 'no')],
  ['claude-haiku-4-5', row(V20250124, 'no')],
  ['claude-opus-4-1', row(V20250124, 'no')],
  // `claude-opus-4` and `claude-sonnet-4` (with or without a date) are the original Claude 4
  // models; their `-4-N` successors are matched by the rows above.
  ['claude-opus-4-0', row(V20250124, 'no')],
  ['claude-sonnet-4-0', row(V20250124, 'no')],
  ['claude-3-7-sonnet', row(V20250124, 'no')],
  // Older models never had a computer tool; the earliest version is the closest they know.
  ['claude-3-', row(V20250124, 'no')],
];

/** `claude-opus-4-20250514` / `claude-sonnet-4-20250514`: Claude 4 with a date, no minor. */
const CLAUDE_4_DATED = /^claude-(opus|sonnet)-4(-\d{8})?$/;

const UNKNOWN = row(TOOLSET, 'unknown');

/**
 * `claude-opus-5-20260724` and `claude-opus-5-latest` are Opus 5; `claude-opus-5-5` is not (a
 * one- or two-digit segment after the family is another version).
 */
export function sameFamily(id: string, prefix: string): boolean {
  if (prefix.endsWith('-')) return id.startsWith(prefix);
  if (id === prefix) return true;
  if (!id.startsWith(`${prefix}-`)) return false;
  return !/^\d{1,2}(-|$)/.test(id.slice(prefix.length + 1));
}

export function modelTools(model: string): ModelTools {
  const id = model.trim().toLowerCase();
  if (CLAUDE_4_DATED.test(id)) return structuredClone(row(V20250124, 'no'));
  for (const [prefix, tools] of MODEL_TABLE) {
    if (sameFamily(id, prefix)) return structuredClone(tools);
  }
  return structuredClone(UNKNOWN);
}

/**
 * The action space of an execution: the specification's `toolset` when it names one the model
 * can take, else the browser toolset where the browser page documents the model, else computer
 * use. A `toolset: "browser"` for a model the documentation lists without it is refused with
 * the reason (before the run starts, not as a 400 from the API mid-run).
 */
export function chooseActionSpace(model: string, requested: ActionSpaceKind | undefined): { ok: true; kind: ActionSpaceKind; tools: ModelTools } | { ok: false; reason: string } {
  const tools = modelTools(model);
  if (requested === 'computer') return { ok: true, kind: 'computer', tools };
  if (requested === 'browser') {
    if (tools.browser === 'no') {
      return { ok: false, reason: `the model ${model} does not support the browser use tool (browser_toolset_20260801); use toolset "computer" or a model the browser use tool lists` };
    }
    return { ok: true, kind: 'browser', tools };
  }
  return { ok: true, kind: tools.browser === 'documented' ? 'browser' : 'computer', tools };
}
