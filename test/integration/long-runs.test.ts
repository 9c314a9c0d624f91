import { describe, expect, it } from 'vitest';
import { longRun, type LongRun } from '../support/long-run.js';

/**
 * Long runs on every current model, in both action spaces, against the scripted model server
 * applying the API's rules: the prefix check on preserved thinking, the tool versions each model
 * refuses, context management in the token count. The conversation is append-only, so no request
 * is refused; the API's context management keeps the last request bounded. Every model and space
 * runs 40 turns here (past the first clearing); two run the full 100 turns, and `npm run bench --
 * tokens` runs all twelve for 100 turns with their token figures.
 */

const MODELS = ['claude-fable-5-2', 'claude-mythos-5-1', 'claude-opus-5-5', 'claude-sonnet-5-5', 'claude-haiku-5-5', 'claude-sonnet-5'];
/** The bound docs/model.md states for the last request of a 100-turn run. */
const LAST_REQUEST_BOUND = 60_000;

function expectAppendOnlyAndClean(run: LongRun, turns: number) {
  expect(run.server.refusals).toEqual([]);
  expect(run.outcome).toEqual({ status: 'completed', output: { turns } });
  expect(run.stats.nSteps).toBe(turns);
  expect(run.events.filter((e) => e.type === 'model_prefix_mismatch')).toEqual([]);
  expect(run.logLines.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  // Each request starts with the previous one, byte for byte but for the cache breakpoints.
  const bodies = run.server.requests.map((r) => r.body as { system: unknown; tools: unknown; messages: unknown[] });
  const strip = (v: unknown) => JSON.stringify(v, (k, x: unknown) => (k === 'cache_control' ? undefined : x));
  for (let i = 1; i < bodies.length; i++) {
    expect(strip(bodies[i]!.system)).toBe(strip(bodies[0]!.system));
    expect(strip(bodies[i]!.tools)).toBe(strip(bodies[0]!.tools));
    expect(strip(bodies[i]!.messages.slice(0, bodies[i - 1]!.messages.length))).toBe(strip(bodies[i - 1]!.messages));
  }
  // The API cleared old tool results, and the prompt cache still served most of each request.
  expect(run.events.some((e) => e.type === 'model_turn' && typeof e.fields.clearedInputTokens === 'number')).toBe(true);
  expect(run.stats.usage.cacheReadInputTokens).toBeGreaterThan(run.stats.usage.inputTokens + run.stats.usage.cacheCreationInputTokens);
  // Summarized thinking says why the model acted.
  expect(run.events.find((e) => e.type === 'model_turn')!.fields.thinking).toMatch(/^Turn 1: next, /);
}

describe.each(['computer', 'browser'] as const)('a %s-use run of 40 turns', (space) => {
  it.each(MODELS)('completes on %s with every request accepted', async (model) => {
    expectAppendOnlyAndClean(await longRun({ model, space, turns: 40 }), 40);
  });
});

describe('a run of 100 turns', () => {
  it.each([
    ['claude-fable-5-2', 'computer'],
    ['claude-opus-5-5', 'browser'],
  ] as const)('on %s (%s use) stays within the stated bound', async (model, space) => {
    const run = await longRun({ model, space, turns: 100 });
    expectAppendOnlyAndClean(run, 100);
    expect(run.requestTokens[run.requestTokens.length - 1]).toBeLessThanOrEqual(LAST_REQUEST_BOUND);
    expect(Math.max(...run.requestTokens)).toBeLessThanOrEqual(LAST_REQUEST_BOUND);
  });
});

describe('a model id the worker does not know', () => {
  const NEW_MODEL = 'claude-nova-6';
  const info = (capabilities: Record<string, unknown>) => ({ type: 'model', id: NEW_MODEL, display_name: 'Claude Nova 6', max_input_tokens: 400_000, capabilities });
  const yes = { supported: true };
  const no = { supported: false };

  it('runs with the capabilities the Models API reports, asked once', async () => {
    const run = await longRun({
      model: NEW_MODEL,
      space: 'computer',
      turns: 40,
      server: {
        models: {
          [NEW_MODEL]: info({
            context_management: { supported: true, clear_tool_uses_20250919: yes, compact_20260112: no, clear_thinking_20251015: yes },
            thinking: { supported: true, types: { adaptive: yes, enabled: no, disabled: yes, between_tools: no } },
          }),
        },
      },
    });
    expectAppendOnlyAndClean(run, 40);
    expect(run.server.modelLookups).toEqual([NEW_MODEL]);
    const body = run.server.requests[0]!.body as { tools: Array<{ type?: string }>; context_management: { edits: Array<{ type: string }> } };
    // The newest generation's computer tool; the context management the API says it has.
    expect(body.tools[0]!.type).toBe('computer_toolset_20260801');
    expect(body.context_management.edits.map((e) => e.type)).toEqual(['clear_tool_uses_20250919']);
  });

  it('runs with the newest generation’s defaults when the Models API fails', async () => {
    const run = await longRun({ model: NEW_MODEL, space: 'computer', turns: 40, server: { models: { [NEW_MODEL]: { status: 503 } } } });
    expectAppendOnlyAndClean(run, 40);
    expect(run.logLines.some((l) => l.includes('the Models API did not answer'))).toBe(true);
    const body = run.server.requests[0]!.body as { context_management: { edits: Array<{ type: string }> }; thinking: unknown };
    expect(body.context_management.edits.map((e) => e.type)).toEqual(['clear_tool_uses_20250919', 'compact_20260112']);
    expect(body.thinking).toEqual({ type: 'adaptive', display: 'summarized' });
  });

  it('takes the operator’s capabilities without asking, and ends before an unmanaged context overflows', async () => {
    const run = await longRun({
      model: NEW_MODEL,
      space: 'computer',
      turns: 100,
      capabilityOverrides: { '*': { clearToolUses: false, compact: false, adaptiveThinking: false, maxInputTokens: 40_000 } },
    });
    expect(run.server.modelLookups).toEqual([]);
    expect(run.server.refusals).toEqual([]);
    expect(run.outcome).toMatchObject({ status: 'failed', code: 'model_error', message: expect.stringMatching(/no context management: the run ends before the context overflows/) });
    // Nothing was edited to make room: the last request held everything, just past 80% of the window.
    expect(run.requestTokens[run.requestTokens.length - 1]).toBeGreaterThan(32_000);
    expect(run.requestTokens[run.requestTokens.length - 1]).toBeLessThanOrEqual(40_000);
  });
});
