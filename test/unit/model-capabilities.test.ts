import { describe, expect, it } from 'vitest';
import { createCapabilityLookup, fromModelInfo, tableCapabilities } from '../../src/model/capabilities.js';
import { contextParams, DEFAULT_CONTEXT_SETTINGS, isPrefixMismatch } from '../../src/model/context-policy.js';
import { createExecutionEvents } from '../../src/execution/events.js';
import { createMetrics } from '../../src/telemetry/metrics.js';

describe('model capabilities', () => {
  it('the table gives the newest generation’s rules to every toolset model and to an id it does not know', () => {
    for (const model of ['claude-fable-5-2', 'claude-opus-5-5', 'claude-sonnet-5', 'claude-opus-4-8', 'claude-nova-7']) {
      expect(tableCapabilities(model)).toMatchObject({ clearToolUses: true, compact: true, adaptiveThinking: true });
    }
    expect(tableCapabilities('claude-fable-5-2').maxInputTokens).toBe(1_000_000);
    expect(tableCapabilities('claude-sonnet-4-5')).toEqual({ clearToolUses: true, compact: false, adaptiveThinking: false, maxInputTokens: 200_000, taskBudget: false });
    // Task budgets: the models the task budgets page lists, by family; an id it does not name, none.
    for (const model of ['claude-opus-4-7', 'claude-opus-5-5-20260922', 'claude-fable-5', 'claude-mythos-5-1', 'claude-haiku-5-5']) expect(tableCapabilities(model).taskBudget, model).toBe(true);
    for (const model of ['claude-fable-5-2', 'claude-sonnet-5', 'claude-opus-4-6', 'claude-nova-7']) expect(tableCapabilities(model).taskBudget, model).toBe(false);
    expect(tableCapabilities('claude-3-7-sonnet-latest')).toMatchObject({ clearToolUses: false, compact: false });
  });

  it('reads the Models API’s capabilities, and keeps the table for what it leaves out', () => {
    const table = tableCapabilities('claude-nova-7');
    expect(
      fromModelInfo(
        {
          max_input_tokens: 500_000,
          capabilities: {
            context_management: { supported: true, clear_tool_uses_20250919: { supported: true }, compact_20260112: { supported: false } },
            thinking: { supported: true, types: { adaptive: { supported: false } } },
          },
        },
        table,
      ),
    ).toEqual({ clearToolUses: true, compact: false, adaptiveThinking: false, maxInputTokens: 500_000, taskBudget: false });
    // A strategy listed while context management as a whole is not supported does not count.
    expect(fromModelInfo({ capabilities: { context_management: { supported: false, clear_tool_uses_20250919: { supported: true } } } }, table)).toMatchObject({ clearToolUses: false });
    expect(fromModelInfo({ capabilities: null, max_input_tokens: null }, table)).toEqual(table);
  });

  it('asks once per model id, falls back to the table on failure or timeout, and never asks with an override', async () => {
    const asked: string[] = [];
    const fallbacks: string[] = [];
    const lookup = createCapabilityLookup({
      retrieve: async (model, signal) => {
        asked.push(model);
        if (model === 'claude-slow') {
          await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
        }
        if (model === 'claude-down') throw new Error('503');
        return { max_input_tokens: 300_000, capabilities: { context_management: { supported: false }, thinking: { supported: false } } };
      },
      timeoutMs: 50,
      overrides: { 'claude-proxy': { compact: false } },
      onFallback: (model) => fallbacks.push(model),
    });
    const [a, b] = await Promise.all([lookup('claude-nova-7'), lookup('claude-nova-7')]);
    expect(a).toBe(b);
    expect(a).toEqual({ source: 'models-api', capabilities: { clearToolUses: false, compact: false, adaptiveThinking: false, maxInputTokens: 300_000, taskBudget: false } });
    expect(await lookup('claude-slow')).toMatchObject({ source: 'table', capabilities: { clearToolUses: true } });
    expect(await lookup('claude-down')).toMatchObject({ source: 'table' });
    expect(await lookup('claude-proxy')).toEqual({ source: 'override', capabilities: { ...tableCapabilities('claude-proxy'), compact: false } });
    await lookup('claude-down');
    expect(asked).toEqual(['claude-nova-7', 'claude-slow', 'claude-down']);
    expect(fallbacks).toEqual(['claude-slow', 'claude-down']);
  });
});

describe('the context policy', () => {
  const all = { clearToolUses: true, compact: true, adaptiveThinking: true, maxInputTokens: 200_000, taskBudget: true };

  it('turns capabilities into the request’s context management, thinking and beta headers', () => {
    const params = contextParams(all, DEFAULT_CONTEXT_SETTINGS);
    expect(params.betas).toEqual(['context-management-2025-06-27', 'compact-2026-01-12']);
    expect(params.context_management?.edits?.map((e) => e.type)).toEqual(['clear_tool_uses_20250919', 'compact_20260112']);
    expect(params.thinking).toEqual({ type: 'adaptive', display: 'summarized' });
    expect(contextParams({ ...all, clearToolUses: false, compact: false, adaptiveThinking: false }, DEFAULT_CONTEXT_SETTINGS)).toEqual({ betas: [] });
  });

  it('the safety net asks the API to drop blocks it cannot bind, with its beta header', () => {
    const params = contextParams({ ...all, adaptiveThinking: false }, DEFAULT_CONTEXT_SETTINGS, true);
    expect(params.thinking).toEqual({ type: 'adaptive', display: 'summarized', block_binding: { prefix_mismatch_behavior: 'drop_block' } });
    expect(params.betas).toContain('thinking-binding-controls-2026-08-01');
    expect(isPrefixMismatch('messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation.')).toBe(true);
    expect(isPrefixMismatch('messages: bad shape')).toBe(false);
  });

  it('counts prefix-check refusals in a metric', async () => {
    const metrics = createMetrics();
    const events = createExecutionEvents({ executionId: 'e1', redact: (v) => v });
    metrics.watch(events, 'e1');
    events.emit('model_prefix_mismatch', { step: 3, level: 'error', message: 'the prefix changed' });
    expect(await metrics.registry.getSingleMetricAsString('execution_worker_model_prefix_mismatches_total')).toMatch(/execution_worker_model_prefix_mismatches_total 1$/m);
  });
});
