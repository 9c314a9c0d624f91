import { describe, expect, it } from 'vitest';
import { chooseActionSpace, modelTools } from '../../src/model/tool-versions.js';

/**
 * The model table against Anthropic's tool documentation (browser use tool and computer use tool
 * pages, November 2026). The lists below are the pages' own; a change of the table that
 * disagrees with them fails here.
 */

// Browser use tool, "Supported models": Fable 5 and 5.1 · Mythos 5 and 5.1 · Opus 4.8, 5, and 5.5 · Sonnet 5.
// Fable 5.2 / Mythos 5.2 keep it from 5.1 (their "what's new" page changes only their computer tool).
const BROWSER_DOCUMENTED = ['claude-fable-5-2', 'claude-mythos-5-2', 'claude-fable-5', 'claude-fable-5-1', 'claude-mythos-5', 'claude-mythos-5-1', 'claude-opus-4-8', 'claude-opus-5', 'claude-opus-5-5', 'claude-sonnet-5'];
// Their own "what's new" pages name the browser use tool; the browser page does not list them.
const BROWSER_MODEL_PAGE = ['claude-sonnet-5-5', 'claude-haiku-5-5'];
// Computer use: the computer toolset only for the models that require it (the 5.5 models reject
// computer_20251124 on the Claude API, Fable 5.2 and Mythos 5.2 everywhere but Bedrock); every
// other model that takes computer_20251124 keeps it.
const COMPUTER_TOOLSET = ['claude-fable-5-2', 'claude-mythos-5-2', 'claude-opus-5-5', 'claude-sonnet-5-5', 'claude-haiku-5-5'];
const V20251124_WITH_BROWSER = ['claude-fable-5', 'claude-fable-5-1', 'claude-mythos-5', 'claude-mythos-5-1', 'claude-opus-4-8', 'claude-opus-5', 'claude-sonnet-5'];
// "Earlier tool versions": computer_20251124 for these (and no toolset).
const V20251124_ONLY = ['claude-opus-4-7', 'claude-opus-4-6', 'claude-sonnet-4-6', 'claude-opus-4-5'];
// computer_20250124 for these.
const V20250124 = ['claude-sonnet-4-5', 'claude-haiku-4-5', 'claude-opus-4-1', 'claude-sonnet-4-0', 'claude-opus-4-0', 'claude-opus-4-20250514', 'claude-sonnet-4-20250514'];

describe('the model table follows the tool documentation', () => {
  it.each(COMPUTER_TOOLSET)('%s uses computer_toolset_20260801 (no beta header, zoom on)', (model) => {
    expect(modelTools(model).computer).toEqual({ type: 'computer_toolset_20260801', zoom: true });
  });

  it.each(V20251124_WITH_BROWSER)('%s keeps computer_20251124 for computer use and has the browser toolset', (model) => {
    expect(modelTools(model).computer).toEqual({ type: 'computer_20251124', beta: 'computer-use-2025-11-24', zoom: true });
    expect(modelTools(model).browser).toBe('documented');
  });

  it.each(V20251124_ONLY)('%s uses computer_20251124 with its beta header', (model) => {
    expect(modelTools(model).computer).toEqual({ type: 'computer_20251124', beta: 'computer-use-2025-11-24', zoom: true });
    expect(modelTools(model).browser).toBe('no');
  });

  it.each(V20250124)('%s uses computer_20250124 with its beta header', (model) => {
    expect(modelTools(model).computer).toEqual({ type: 'computer_20250124', beta: 'computer-use-2025-01-24', zoom: false });
    expect(modelTools(model).browser).toBe('no');
  });

  it('defaults to the browser toolset exactly for the models the browser page lists', () => {
    for (const model of BROWSER_DOCUMENTED) expect(chooseActionSpace(model, undefined)).toMatchObject({ ok: true, kind: 'browser' });
    for (const model of [...BROWSER_MODEL_PAGE, ...V20251124_ONLY, ...V20250124, 'claude-fable-5-3']) {
      expect(chooseActionSpace(model, undefined)).toMatchObject({ ok: true, kind: 'computer' });
    }
  });

  it('lets a specification ask for the browser toolset where the documentation allows it, and refuses it where it does not', () => {
    expect(chooseActionSpace('claude-sonnet-5-5', 'browser')).toMatchObject({ ok: true, kind: 'browser' });
    expect(chooseActionSpace('claude-opus-5', 'computer')).toMatchObject({ ok: true, kind: 'computer' });
    const refused = chooseActionSpace('claude-sonnet-4-5', 'browser');
    expect(refused.ok).toBe(false);
    expect(refused.ok ? '' : refused.reason).toMatch(/does not support the browser use tool/);
  });

  it('resolves dated ids and aliases by family, the longer family first', () => {
    expect(modelTools('claude-opus-5-5-20260922').computer.type).toBe('computer_toolset_20260801');
    expect(modelTools('claude-opus-5-20260724').computer.type).toBe('computer_20251124');
    expect(modelTools('claude-fable-5-2-20261109').computer.type).toBe('computer_toolset_20260801');
    expect(modelTools('Claude-Sonnet-5-Latest').browser).toBe('documented');
    expect(modelTools('claude-sonnet-4-6-20260101').computer.type).toBe('computer_20251124');
  });

  it('keeps screenshots within what each model takes', () => {
    expect(modelTools('claude-sonnet-5').images).toEqual({ maxEdgePx: 2000, maxPixels: 3_750_000 });
    expect(modelTools('claude-opus-4-6').images).toEqual({ maxEdgePx: 1568, maxPixels: 1_150_000 });
  });

  it('gives an unknown model the computer toolset and no browser default', () => {
    expect(modelTools('some-proxy-model')).toMatchObject({ computer: { type: 'computer_toolset_20260801' }, browser: 'unknown' });
  });
});
