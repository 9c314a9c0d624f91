import { describe, expect, it } from 'vitest';
import { countEvents, noCounters } from '../../src/execution/counters.js';
import { createExecutionEvents } from '../../src/execution/events.js';
import { composeModel } from '../../src/runner/model-pipeline.js';
import type { ModelInterceptor, ModelTurnRequest } from '../../src/model/types.js';
import type { ModelResponse, TokenUsage } from '../../src/contract/recording.js';

const used = (inputTokens: number, outputTokens = 0): TokenUsage => ({ inputTokens, outputTokens, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });

describe('the counters', () => {
  it('count the events that say a thing was done, and nothing else', () => {
    const events = createExecutionEvents({ executionId: 'e1', redact: (v) => v });
    const counters = countEvents(events);
    events.emit('model_turn', { step: 1, by: 'model', latencyMs: 1, overheadMs: null, stopReason: 'tool_use', usage: used(10), toolCalls: [] });
    events.notify('images_captured', { step: 1, images: 2 });
    events.notify('action_counted', { step: 1, action: 'left_click' });
    // An action line alone (a call not run, an unknown tool) is no agent action.
    events.emit('action', { step: 1, tool: 'x', action: 'x', input: {}, ok: false, error: 'unknown tool' });
    events.emit('replayed_step', { step: 2, by: 'cache', actions: 3 });
    events.emit('model_turn', { step: 3, by: 'repair', latencyMs: 1, overheadMs: null, stopReason: 'end_turn', usage: used(5), toolCalls: [] });
    // The final check is a request, not a step.
    events.emit('final_check', { matches: true, reason: null, latencyMs: 1, usage: used(7) });
    expect(counters).toMatchObject({ nSteps: 3, nAgentActions: 1, nScreenshots: 2 });
    // Usage is what the meter told, not what the lines show.
    expect(counters.usage).toEqual(used(0));
  });

  it('add each model_usage to the run and to its model, in the order the models were first asked', () => {
    const events = createExecutionEvents({ executionId: 'e1', redact: (v) => v });
    const counters = countEvents(events);
    events.notify('model_usage', { model: 'b', usage: used(100, 10), costUsd: 0.5, prices: 'table' });
    events.notify('model_usage', { model: 'a', usage: used(1), costUsd: 0.25, prices: 'table' });
    events.notify('model_usage', { model: 'b', usage: used(20), costUsd: 0.125, prices: 'fallback' });
    expect(counters.usage).toEqual(used(121, 10));
    expect(counters.costUsd).toBe(0.875);
    expect([...counters.models.keys()]).toEqual(['b', 'a']);
    expect(counters.models.get('b')).toEqual({ requests: 2, ...used(120, 10), costUsd: 0.625, prices: 'fallback' });
    expect(counters.models.get('a')).toMatchObject({ requests: 1, prices: 'table' });
  });

  it('hear one stream only, and a run that never started counted nothing', () => {
    const heard = createExecutionEvents({ executionId: 'e1', redact: (v) => v });
    const other = createExecutionEvents({ executionId: 'e2', redact: (v) => v });
    const counters = countEvents(heard);
    other.emit('replayed_step', { step: 1, by: 'cache', actions: 1 });
    expect(counters.nSteps).toBe(0);
    expect(noCounters()).toMatchObject({ nSteps: 0, nAgentActions: 0, nScreenshots: 0, costUsd: 0 });
  });
});

describe('the model pipeline', () => {
  it('hands each request through its interceptors in order, the first the outermost, and the response back', async () => {
    const order: string[] = [];
    const stage =
      (name: string): ModelInterceptor =>
      async (request, signal, next) => {
        order.push(`${name} in`);
        const response = await next({ ...request, maxTokens: request.maxTokens + 1 }, signal);
        order.push(`${name} out`);
        return response;
      };
    const seen: number[] = [];
    const response: ModelResponse = { id: 'r', model: 'm', content: [], stopReason: 'end_turn', usage: used(1) };
    const model = composeModel({ createTurn: async (request) => (seen.push(request.maxTokens), order.push('model'), response) }, [stage('a'), stage('b')]);
    const request: ModelTurnRequest = { model: 'm', system: [], tools: [], messages: [], maxTokens: 10, betas: [] };
    await expect(model.createTurn(request, new AbortController().signal)).resolves.toBe(response);
    expect(order).toEqual(['a in', 'b in', 'model', 'b out', 'a out']);
    expect(seen).toEqual([12]);
  });
});
