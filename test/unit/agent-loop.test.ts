import { describe, expect, it } from 'vitest';
import { runAgent } from '../../src/agent/loop.js';
import type { AgentInput } from '../../src/agent/types.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { compileSchema } from '../../src/domain/json-schema.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createModelPricing } from '../../src/model/prices.js';
import type { ToolResultBlock } from '../../src/model/types.js';
import { meterModel } from '../../src/runner/usage-meter.js';
import { createComputerTool } from '../../src/toolset/computer-tool.js';
import { createDisplayGeometry } from '../../src/toolset/display.js';
import type { ActionSpace } from '../../src/toolset/types.js';
import { createFakeSession } from '../support/fake-session.js';
import { heardEvents } from '../support/heard-events.js';
import { computer, finish, say, scriptedModel, tool, type Turn } from '../support/scripted-model.js';
import { countEvents } from '../../src/execution/counters.js';

/**
 * The loop over the earlier computer tool (the real action table) on a fake browser, and over
 * a toy toolset for the rules that only toolsets have (halting a batch, one observation per turn).
 */
function setup(turns: Turn[], overrides: Partial<AgentInput> = {}, payload: unknown = null, schema?: Record<string, unknown>, size = { width: 1280, height: 800 }, space?: (vault: ReturnType<typeof createSecretVault>) => ActionSpace) {
  const model = scriptedModel(turns);
  const session = createFakeSession({ allowed: (url) => new URL(url).hostname === 'shop.test', ...size });
  const { events: stream, lines: events, marks } = heardEvents();
  const stats = countEvents(stream);
  const vault = createSecretVault(payload, schema);
  const input: AgentInput = {
    spec: { prompt: 'Buy a mug', allowedDomains: ['shop.test'], steps: ['Open the catalogue', 'Pay'] },
    modelId: 'claude-opus-4-7',
    vault,
    maxSteps: 10,
    startUrl: 'http://shop.test/',
    signal: new AbortController().signal,
    ...overrides,
  };
  const actions =
    space?.(vault) ??
    createComputerTool({
      session,
      secrets: vault,
      allowJavascript: false,
      geometry: createDisplayGeometry(session.viewport),
      version: 'computer_20251124',
      beta: 'computer-use-2025-11-24',
      zoom: true,
    });
  // As the runner composes it: the meter adds up and prices every request (runner/usage-meter.ts).
  const metered = meterModel(model, { counters: stats, budget: {}, pricing: createModelPricing(), events: stream });
  const run = () =>
    runAgent({ model: metered, space: actions, session, events: stream }, input, stats);
  return { model, session, events, marks, stats, run, stream };
}

const lastResults = (req: { messages: Array<{ role: string; content: unknown[] }> }) =>
  req.messages[req.messages.length - 1]!.content as ToolResultBlock[];

describe('the agent loop', () => {
  it('runs actions, counts steps, actions and screenshots, and completes with the output', async () => {
    const t = setup([
      { content: [say('Clicking'), computer('left_click', { coordinate: [100, 200] })] },
      { content: [computer('type', { text: 'mug' }), computer('screenshot')] },
      { content: [finish('completed', { output: { total: 12 } })] },
    ]);
    const outcome = await t.run();
    expect(outcome).toEqual({ status: 'completed', output: { total: 12 } });
    expect(t.stats).toMatchObject({ nSteps: 3, nAgentActions: 2, nScreenshots: 4 });
    expect(t.session.calls).toContain('click(100,200,left,1)');
    expect(t.session.calls).toContain('typeText(mug)');
    expect(t.session.calls[0]).toBe('navigate(http://shop.test/)');
    expect(t.marks).toEqual(['click (100, 200)', 'type "mug"']);
    expect(t.stats.usage).toEqual({ inputTokens: 300, outputTokens: 30, cacheReadInputTokens: 150, cacheCreationInputTokens: 15 });
    // Every tool_use is answered, each with a fresh screenshot.
    const second = t.model.requests[1]!;
    const results = lastResults(second);
    expect(results).toHaveLength(1);
    expect(results[0]!.content.some((b) => b.type === 'image')).toBe(true);
    // The request carries the tool version, its beta, the display and the system prompt.
    expect(second.betas).toEqual(['computer-use-2025-11-24']);
    expect(second.tools[0]).toMatchObject({ type: 'computer_20251124', display_width_px: 1280, display_height_px: 800, enable_zoom: true });
    expect(second.system[0]!.text).toContain('Buy a mug');
    expect(second.system[0]!.text).toContain('2. Pay');
    expect(t.events.filter((e) => e.type === 'model_turn')).toHaveLength(3);
    expect(t.events.filter((e) => e.type === 'action').map((e) => e.fields.ok)).toEqual([true, true, true]);
  });

  it('fails with agent_failed when the agent calls finish with failed', async () => {
    const t = setup([{ content: [finish('failed', { reason: 'the shop is closed' })] }]);
    expect(await t.run()).toEqual({ status: 'failed', code: 'agent_failed', message: 'the shop is closed' });
  });

  it('asks once for finish after end_turn, then fails on a second end_turn', async () => {
    const t = setup([{ content: [say('I am done.')] }, { content: [say('Really done.')] }]);
    expect(await t.run()).toMatchObject({ status: 'failed', code: 'agent_failed' });
    const nudge = t.model.requests[1]!.messages.at(-1)!;
    expect(JSON.stringify(nudge)).toContain('finish');
    expect(t.stats.nSteps).toBe(2);
  });

  it('accepts finish after one nudge', async () => {
    const t = setup([{ content: [say('done')] }, { content: [finish('completed', { output: 'ok' })] }]);
    expect(await t.run()).toEqual({ status: 'completed', output: 'ok' });
  });

  it('treats max_tokens as no end and keeps going', async () => {
    const t = setup([{ content: [say('long text')], stopReason: 'max_tokens' }, { content: [finish('completed')] }]);
    expect(await t.run()).toEqual({ status: 'completed', output: null });
    expect(JSON.stringify(t.model.requests[1]!.messages.at(-1))).toContain('cut off');
  });

  it('fails a refusal with agent_failed', async () => {
    const t = setup([{ content: [], stopReason: 'refusal' }]);
    expect(await t.run()).toMatchObject({ status: 'failed', code: 'agent_failed' });
  });

  it('stops at maxSteps with max_steps', async () => {
    const turns: Turn[] = Array.from({ length: 5 }, () => ({ content: [computer('left_click', { coordinate: [1, 1] })] }));
    const t = setup(turns, { maxSteps: 3 });
    expect(await t.run()).toMatchObject({ status: 'failed', code: 'max_steps' });
    expect(t.stats.nSteps).toBe(3);
  });

  it('refuses navigate outside the allow-list with is_error, counts it, and goes on', async () => {
    const t = setup([{ content: [tool('navigate', { url: 'http://evil.test/' })] }, { content: [tool('navigate', { url: 'http://shop.test/cart' })] }, { content: [finish('completed')] }]);
    expect(await t.run()).toMatchObject({ status: 'completed' });
    const refused = lastResults(t.model.requests[1]!)[0]!;
    expect(refused.is_error).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('outside the allow-list');
    const allowed = lastResults(t.model.requests[2]!)[0]!;
    expect(allowed.is_error).toBeUndefined();
    expect(t.stats.nAgentActions).toBe(2);
  });

  it('answers an unknown tool and an unknown action with is_error and goes on', async () => {
    const t = setup([{ content: [tool('teleport', {}), computer('fly')] }, { content: [finish('completed')] }]);
    await t.run();
    const results = lastResults(t.model.requests[1]!);
    expect(results.map((r) => r.is_error)).toEqual([true, true]);
    expect(JSON.stringify(results)).toContain('unknown tool');
    expect(JSON.stringify(results)).toContain('unknown action');
  });

  it('lets the agent fix an output that fails the output schema once, then fails with output_invalid', async () => {
    const validateOutput = compileSchema({ type: 'object', required: ['total'], properties: { total: { type: 'number' } } });
    const fixed = setup([{ content: [finish('completed', { output: { total: 'x' } })] }, { content: [finish('completed', { output: { total: 3 } })] }], { validateOutput });
    expect(await fixed.run()).toEqual({ status: 'completed', output: { total: 3 } });
    const stubborn = setup(
      [{ content: [finish('completed', { output: {} })] }, { content: [finish('completed', { output: {} })] }],
      { validateOutput },
    );
    expect(await stubborn.run()).toMatchObject({ status: 'failed', code: 'output_invalid' });
  });

  it('shows the model placeholders only and types the real secret', async () => {
    const schema = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true } } };
    const t = setup([{ content: [computer('type', { text: '{{password}}' })] }, { content: [finish('completed')] }], {}, { user: 'ann', password: 'hunter2-secret' }, schema);
    await t.run();
    // A secret is typed one character at a time, each into a field marked first (docs/secrets.md).
    const typed = t.session.calls.filter((c) => c.startsWith('typeText(')).map((c) => c.slice('typeText('.length, -1)).join('');
    expect(typed).toBe('hunter2-secret');
    const sent = JSON.stringify(t.model.requests);
    expect(sent).not.toContain('hunter2-secret');
    expect(sent).toContain('{{password}}');
    expect(sent).toContain('ann');
  });

  it('stops with the signal reason when aborted', async () => {
    const controller = new AbortController();
    const t = setup([{ content: [computer('left_click', { coordinate: [1, 1] })] }, { content: [finish('completed')] }], { signal: controller.signal });
    t.session.settle = async () => {
      controller.abort(new ExecutionError('timeout', 'too slow'));
    };
    await expect(t.run()).rejects.toMatchObject({ code: 'timeout' });
  });

  it('ends the run at the deadline even when the page hangs, cancelling the browser call', async () => {
    const controller = new AbortController();
    const t = setup([{ content: [computer('left_click', { coordinate: [1, 1] })] }, { content: [finish('completed')] }], { signal: controller.signal });
    let cancelled = false;
    t.session.screenshot = (_options, signal) =>
      new Promise((_resolve, reject) => {
        // A hung renderer: the capture never answers on its own; the deadline fires while it
        // waits, and the port stops it (as the real one does) when the run's signal fires.
        signal.addEventListener('abort', () => {
          cancelled = true;
          reject(new Error('capture cancelled'));
        });
        queueMicrotask(() => controller.abort(new ExecutionError('timeout', 'deadline')));
      });
    await expect(t.run()).rejects.toMatchObject({ code: 'timeout' });
    expect(cancelled).toBe(true);
  });

  it('turns a browser failure into browser_error', async () => {
    const t = setup([{ content: [computer('left_click', { coordinate: [1, 1] })] }]);
    t.session.failOn = 'click';
    await expect(t.run()).rejects.toMatchObject({ code: 'browser_error' });
  });

  it('passes model errors through', async () => {
    const t = setup([new ExecutionError('model_error', 'HTTP 500 after 4 retries')]);
    await expect(t.run()).rejects.toMatchObject({ code: 'model_error' });
  });

  it('sends every earlier turn again unchanged, thinking included; only the cache breakpoints move', async () => {
    const thinking = { type: 'thinking', thinking: 'The button is at the top.', signature: 'sig_1' };
    const t = setup([
      { content: [thinking, computer('left_click', { coordinate: [1, 1] })] },
      { content: [computer('screenshot')] },
      { content: [computer('left_click', { coordinate: [2, 2] })] },
      { content: [finish('completed')] },
    ]);
    await t.run();
    const strip = (v: unknown) => JSON.stringify(v, (k, x: unknown) => (k === 'cache_control' ? undefined : x));
    for (let i = 1; i < t.model.requests.length; i++) {
      const before = t.model.requests[i - 1]!;
      const now = t.model.requests[i]!;
      expect(strip(now.system)).toBe(strip(before.system));
      expect(strip(now.tools)).toBe(strip(before.tools));
      expect(strip(now.messages.slice(0, before.messages.length))).toBe(strip(before.messages));
    }
    // Every screenshot stays: 1 opening + 3 actions.
    expect(JSON.stringify(t.model.requests[3]!.messages).match(/"type":"image"/g)).toHaveLength(4);
    expect(t.events.find((e) => e.type === 'model_turn')!.fields.thinking).toBe('The button is at the top.');
  });

  it('logs a prefix-check refusal the client recovered from as an error event', async () => {
    const t = setup([{ content: [finish('completed')], notes: { prefixMismatch: 'invalid_request_error: messages.1.content.0: bound to a different conversation' } }]);
    await expect(t.run()).resolves.toMatchObject({ status: 'completed' });
    expect(t.events.filter((e) => e.type === 'model_prefix_mismatch')).toEqual([
      { type: 'model_prefix_mismatch', fields: { step: 1, level: 'error', message: expect.stringContaining('bound to a different conversation') } },
    ]);
  });

  it('ends a run whose context the API does not manage before it overflows, without editing a turn', async () => {
    const context = { managed: false, maxInputTokens: 10_000 };
    const usage = (inputTokens: number) => ({ inputTokens, outputTokens: 10, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    const t = setup([
      { content: [computer('screenshot')], notes: { context }, usage: usage(7_000) },
      { content: [computer('screenshot')], notes: { context }, usage: usage(8_100) },
      { content: [finish('completed')] },
    ]);
    const outcome = await t.run();
    expect(outcome).toEqual({ status: 'failed', code: 'model_error', message: expect.stringMatching(/8100 input tokens, past 8000 .* no context management/) });
    expect(t.model.requests).toHaveLength(2);
    // The turn that passed the bound ran its calls: 1 opening + 2 screenshots.
    expect(t.stats.nScreenshots).toBe(3);
    // A finish in that turn still ends the run as the model said.
    const finishing = setup([{ content: [finish('completed')], notes: { context }, usage: usage(9_000) }]);
    await expect(finishing.run()).resolves.toEqual({ status: 'completed', output: null });
    // A managed context of the same size goes on.
    const managed = setup([
      { content: [computer('screenshot')], notes: { context: { ...context, managed: true } }, usage: usage(9_900) },
      { content: [finish('completed')] },
    ]);
    await expect(managed.run()).resolves.toMatchObject({ status: 'completed' });
  });

  it('scales screenshots and coordinates when the viewport exceeds the image limits', async () => {
    const t = setup([{ content: [computer('left_click', { coordinate: [676, 380] })] }, { content: [finish('completed')] }], {}, null, undefined, { width: 1920, height: 1080 });
    await t.run();
    const display = t.model.requests[0]!.tools[0] as { display_width_px: number; display_height_px: number };
    expect(display.display_width_px * display.display_height_px).toBeLessThanOrEqual(1_150_000);
    expect(display.display_width_px).toBeLessThan(1920);
    expect(t.session.calls).toContain(`screenshot(${display.display_width_px}x${display.display_height_px})`);
    const click = t.session.calls.find((c) => c.startsWith('click('))!;
    const [x, y] = click.slice(6).split(',').map(Number);
    expect(x).toBeCloseTo(676 * (1920 / display.display_width_px), -1);
    expect(y).toBeCloseTo(380 * (1080 / display.display_height_px), -1);
  });

  describe('with a toolset', () => {
    /** A toy toolset: `act` acts (text answer), `look` answers with an image, `boom` fails. */
    const toy =
      (observe: boolean) =>
      (): ActionSpace => ({
        kind: 'browser',
        toolType: 'toy_toolset',
        betas: [],
        display: { width: 1280, height: 800 },
        guide: 'Use the toy toolset.',
        tools: () => [{ type: 'browser_toolset_20260801' }],
        owns: (call) => call.toolset_name === 'toy',
        async run(call) {
          const base = { tool_use_id: call.id, type: 'tool_result' as const, toolset_name: 'toy' };
          if (call.name === 'boom') return { result: { ...base, is_error: true, content: [{ type: 'text', text: 'Error: boom' }] }, action: 'boom', counted: true, ok: false, error: 'Error: boom', label: 'boom', images: 0, changesPage: false };
          if (call.name === 'look') return { result: { ...base, content: [{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'eA==' } }] }, action: 'look', counted: false, ok: true, label: 'look', images: 1, changesPage: false };
          return { result: { ...base, content: [{ type: 'text', text: 'Clicked.' }] }, action: call.name, counted: true, ok: true, label: call.name, images: 0, changesPage: true };
        },
        opening: async () => [{ type: 'text', text: 'the page' }],
        ...(observe ? { observe: async () => ({ type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/jpeg' as const, data: 'b2JzZXJ2ZQ==' } }) } : {}),
        notExecuted: (call) => ({ type: 'tool_result', tool_use_id: call.id, toolset_name: 'toy', is_error: true, content: [{ type: 'text', text: 'Not executed: an earlier action in this turn failed.' }] }),
      });
    const member = (name: string) => ({ ...tool(name, {}), toolset_name: 'toy' });

    it('asks for traces only while something hears them, and tells each executed action\'s with its step', async () => {
      const asked: boolean[] = [];
      /** The toy toolset, with a trace for every action run with `trace` asked for (absent means asked). */
      const traced = (): ActionSpace => {
        const space = toy(false)();
        return {
          ...space,
          async run(call, context) {
            asked.push(context.trace !== false);
            const report = await space.run(call, context);
            return context.trace === false ? report : { ...report, trace: { tool: call.name, toolsetName: 'toy', input: {}, url: 'http://shop.test/' } };
          },
        };
      };
      const turns = (): Turn[] => [{ content: [member('act')] }, { content: [member('act'), member('boom')] }, { content: [finish('completed')] }];
      const unheard = setup(turns(), {}, null, undefined, undefined, traced);
      expect(await unheard.run()).toEqual({ status: 'completed', output: null });
      // Nothing keeps traces: no action pays for their page reads.
      expect(asked).toEqual([false, false, false]);

      asked.length = 0;
      const heard = setup(turns(), {}, null, undefined, undefined, traced);
      const traces: Array<{ step: number; tool: string }> = [];
      heard.stream.on('action_trace', ({ step, trace }) => traces.push({ step, tool: trace.tool }));
      expect(await heard.run()).toEqual({ status: 'completed', output: null });
      expect(asked).toEqual([true, true, true]);
      // A failed action leaves no trace; none is ever a line of logs.jsonl.
      expect(traces).toEqual([
        { step: 1, tool: 'act' },
        { step: 2, tool: 'act' },
      ]);
      expect(heard.events.map((e) => e.type)).not.toContain('action_trace');
    });

    it('stops a turn at the first failed member: the rest are not executed, finish is not run, every result echoes toolset_name', async () => {
      const t = setup([{ content: [member('act'), member('boom'), member('act'), finish('completed')] }, { content: [finish('completed')] }], {}, null, undefined, undefined, toy(false));
      expect(await t.run()).toEqual({ status: 'completed', output: null });
      const results = lastResults(t.model.requests[1]!);
      expect(results.map((r) => r.is_error ?? false)).toEqual([false, true, true, true]);
      expect(results.slice(0, 3).map((r) => r.toolset_name)).toEqual(['toy', 'toy', 'toy']);
      expect(results[3]!.toolset_name).toBeUndefined();
      expect(JSON.stringify(results[2]!.content)).toContain('Not executed: an earlier action in this turn failed.');
      expect(JSON.stringify(results[3]!.content)).toContain('finish was not run');
      // The failed member counts as an action; the one not executed does not.
      expect(t.stats.nAgentActions).toBe(2);
    });

    it('attaches one observation to the last result of a turn that changed the page, and none when the turn ended with a look', async () => {
      const t = setup(
        [{ content: [member('act'), member('act')] }, { content: [member('act'), member('look')] }, { content: [finish('completed')] }],
        {},
        null,
        undefined,
        undefined,
        toy(true),
      );
      await t.run();
      const first = lastResults(t.model.requests[1]!);
      expect(first[0]!.content.some((b) => b.type === 'image')).toBe(false);
      expect(first[1]!.content.at(-1)).toMatchObject({ type: 'image', source: { data: 'b2JzZXJ2ZQ==' } });
      const second = lastResults(t.model.requests[2]!);
      expect(second.flatMap((r) => r.content).filter((b) => b.type === 'image')).toHaveLength(1);
      // No opening image; one observation; one look.
      expect(t.stats.nScreenshots).toBe(2);
    });

    it('answers a call of another toolset with is_error and its toolset_name', async () => {
      const t = setup([{ content: [{ ...tool('left_click', {}), toolset_name: 'computer' }] }, { content: [finish('completed')] }], {}, null, undefined, undefined, toy(false));
      await t.run();
      const [result] = lastResults(t.model.requests[1]!);
      expect(result).toMatchObject({ is_error: true, toolset_name: 'computer' });
    });
  });
});
