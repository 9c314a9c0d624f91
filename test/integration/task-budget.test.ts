import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicModel } from '../../src/model/anthropic-client.js';
import type { ModelTurnRequest } from '../../src/model/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { checkRequestShape } from '../support/fake-api-rules.js';
import { startScriptedModelServer, text, turn, type ScriptedModelServer } from '../support/scripted-model-server.js';

/**
 * The API's task budget (docs/model.md#task-budgets) as the real SDK sends it to the scripted
 * model server, which checks its shape as @anthropic-ai/sdk 1.12.0 types it
 * (`output_config.task_budget: BetaTokenTaskBudget`) and refuses it where the API would.
 */

const BETA = 'task-budgets-2026-03-13';
const request = (model: string, taskBudget?: ModelTurnRequest['taskBudget']): ModelTurnRequest => ({
  model,
  system: [{ type: 'text', text: 'You operate a browser.' }],
  tools: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Begin.' }] }],
  maxTokens: 1024,
  betas: [],
  ...(taskBudget ? { taskBudget } : {}),
});
const body = (server: ScriptedModelServer, i: number) => server.requests[i]!.body as Record<string, unknown>;
const betas = (server: ScriptedModelServer, i: number) => String(server.requests[i]!.headers['anthropic-beta'] ?? '');

describe('task budgets on the wire', () => {
  let server: ScriptedModelServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('sends the budget and what is left to a model the task budgets page lists, with its beta, and the API takes it', async () => {
    server = await startScriptedModelServer(() => turn(text('ok')));
    const client = createAnthropicModel({ apiKey: 'sk-ant-x', baseURL: server.url, maxRetries: 0, logger: createSilentLogger() });
    for (const model of ['claude-opus-5-5', 'claude-opus-4-7', 'claude-haiku-5-5-20261007', 'claude-fable-5-1']) {
      await client.createTurn(request(model, { total: 120_000, remaining: 87_654 }), new AbortController().signal);
    }
    for (let i = 0; i < 4; i++) {
      expect(body(server, i).output_config).toEqual({ task_budget: { type: 'tokens', total: 120_000, remaining: 87_654 } });
      expect(betas(server, i).split(',')).toContain(BETA);
    }
    expect(server.refusals).toEqual([]);
  });

  it('sends none to a model without task budgets, nor a total under the API\'s 20,000: the system prompt says it in words', async () => {
    server = await startScriptedModelServer(() => turn(text('ok')));
    const client = createAnthropicModel({ apiKey: 'sk-ant-x', baseURL: server.url, maxRetries: 0, logger: createSilentLogger() });
    await client.createTurn(request('claude-sonnet-5', { total: 120_000, remaining: 5 }), new AbortController().signal);
    await client.createTurn(request('claude-fable-5-2', { total: 120_000, remaining: 5 }), new AbortController().signal);
    await client.createTurn(request('claude-opus-5-5', { total: 19_999, remaining: 19_999 }), new AbortController().signal);
    await client.createTurn(request('claude-opus-5-5'), new AbortController().signal);
    for (let i = 0; i < 4; i++) {
      expect(body(server, i).output_config, `request ${i + 1}`).toBeUndefined();
      expect(betas(server, i), `request ${i + 1}`).not.toContain(BETA);
    }
  });

  it('an operator may state the capability for an id the table does not name; a model the API refuses it for answers 400', async () => {
    server = await startScriptedModelServer(() => turn(text('ok')), { expectRefusals: true });
    const client = createAnthropicModel({ apiKey: 'sk-ant-x', baseURL: server.url, maxRetries: 0, logger: createSilentLogger(), capabilityOverrides: { 'claude-sonnet-5': { taskBudget: true } } });
    await expect(client.createTurn(request('claude-sonnet-5', { total: 50_000, remaining: 50_000 }), new AbortController().signal)).rejects.toMatchObject({
      code: 'model_error',
      message: expect.stringContaining("task budgets are not supported by 'claude-sonnet-5'"),
    });
    expect(server.refusals).toHaveLength(1);
  });
});

describe("the scripted server's task budget rules", () => {
  const valid = { type: 'tokens', total: 64_000, remaining: 1_000 };
  const shape = (taskBudget: unknown, model = 'claude-opus-5-5', headers = [BETA]) => checkRequestShape({ model, messages: [], output_config: { task_budget: taskBudget } }, headers);

  it('takes the shape the SDK types, remaining optional or null', () => {
    expect(shape(valid)).toBeUndefined();
    expect(shape({ type: 'tokens', total: 20_000 })).toBeUndefined();
    expect(shape({ ...valid, remaining: null })).toBeUndefined();
    expect(shape(null)).toBeUndefined();
  });

  it('refuses without the beta, on a model the page does not list, and each malformed field, with the API\'s 400', () => {
    expect(shape(valid, 'claude-opus-5-5', [])).toMatchObject({ status: 400, message: expect.stringContaining(BETA) });
    expect(shape(valid, 'claude-sonnet-5')).toMatchObject({ status: 400, message: expect.stringContaining('not supported') });
    expect(shape(valid, 'claude-fable-5-2')).toMatchObject({ status: 400 });
    expect(shape({ ...valid, type: 'dollars' })).toMatchObject({ status: 400, message: expect.stringContaining('.type') });
    expect(shape({ ...valid, total: 19_999 })).toMatchObject({ status: 400, message: expect.stringContaining('.total') });
    expect(shape({ ...valid, total: '64000' })).toMatchObject({ status: 400, message: expect.stringContaining('.total') });
    expect(shape({ ...valid, remaining: 64_001 })).toMatchObject({ status: 400, message: expect.stringContaining('.remaining') });
    expect(shape({ ...valid, remaining: -1 })).toMatchObject({ status: 400, message: expect.stringContaining('.remaining') });
    expect(shape({ ...valid, left: 5 })).toMatchObject({ status: 400, message: expect.stringContaining('Extra inputs') });
    expect(shape([valid])).toMatchObject({ status: 400 });
    expect(checkRequestShape({ model: 'claude-opus-5-5', output_config: 'tokens' }, [BETA])).toMatchObject({ status: 400 });
  });

  it('every change of a valid budget that leaves the typed shape is refused (generated)', () => {
    const key = fc.constantFrom('type', 'total', 'remaining', 'extra');
    const junk = fc.oneof(fc.string(), fc.double(), fc.integer({ min: -1_000_000, max: -1 }), fc.boolean(), fc.constant(null), fc.array(fc.integer()), fc.object());
    fc.assert(
      fc.property(key, junk, (field, value) => {
        const changed: Record<string, unknown> = { ...valid, [field]: value };
        const typed =
          changed.type === 'tokens' &&
          Number.isInteger(changed.total) &&
          (changed.total as number) >= 20_000 &&
          (changed.remaining === null || (Number.isInteger(changed.remaining) && (changed.remaining as number) >= 0 && (changed.remaining as number) <= (changed.total as number))) &&
          !('extra' in changed);
        expect(shape(changed) === undefined).toBe(typed);
      }),
    );
  });
});
