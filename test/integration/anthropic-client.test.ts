import { afterEach, describe, expect, it } from 'vitest';
import { ExecutionError } from '../../src/contract/errors.js';
import { createAnthropicModel } from '../../src/model/anthropic-client.js';
import { DEFAULT_CONTEXT_SETTINGS } from '../../src/model/context-policy.js';
import type { ModelTurnRequest } from '../../src/model/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import {
  computer,
  delayed,
  failure,
  startScriptedModelServer,
  text,
  turn,
  toolUseBlock,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';
import type { ModelResponse } from '../../src/contract/recording.js';

const API_KEY = 'sk-ant-test-secret-key-0123456789';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==';

/** Keeps every log line, to check what the adapter says (and never says). */
function capturingLogger(lines: string[] = []): Logger & { lines: string[] } {
  const write = (level: string) => (obj: Record<string, unknown>, msg?: string) => {
    lines.push(JSON.stringify({ level, ...obj, msg }));
  };
  const logger = {
    lines,
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    child: (bindings: Record<string, unknown>) => {
      const child = capturingLogger(lines);
      const wrap = (level: keyof Logger) => (obj: Record<string, unknown>, msg?: string) =>
        (child[level] as (o: Record<string, unknown>, m?: string) => void)({ ...bindings, ...obj }, msg);
      return { ...child, debug: wrap('debug'), info: wrap('info'), warn: wrap('warn'), error: wrap('error') };
    },
  };
  return logger;
}

const request: ModelTurnRequest = {
  model: 'claude-opus-4-5',
  system: [{ type: 'text', text: 'You operate a browser.', cache_control: { type: 'ephemeral' } }],
  tools: [
    { type: 'computer_20251124', name: 'computer', display_width_px: 1280, display_height_px: 800, enable_zoom: true },
    { name: 'finish', description: 'Ends the run.', input_schema: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } },
  ],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'Do the task.' }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Look first.', signature: 'c2lnbmF0dXJl' },
        { type: 'tool_use', id: 'toolu_a', name: 'computer', input: { action: 'screenshot' } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_a',
          content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }],
          cache_control: { type: 'ephemeral' },
        },
      ],
    },
  ],
  maxTokens: 2048,
  betas: ['computer-use-2025-11-24'],
};

describe('createAnthropicModel against a scripted Messages API', () => {
  let server: ScriptedModelServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  const model = (url: string, maxRetries: number, logger = capturingLogger()) =>
    createAnthropicModel({ apiKey: API_KEY, baseURL: url, maxRetries, logger });

  it('round-trips a turn: the request on the wire and the response mapped back', async () => {
    server = await startScriptedModelServer([
      {
        ...turn(text('Clicking the button.'), toolUseBlock('computer', { action: 'left_click', coordinate: [100, 200] }, 'toolu_b'), {
          type: 'thinking',
          thinking: 'The button is blue.',
          signature: 'abc',
        }),
        usage: { input_tokens: 1500, output_tokens: 42, cache_read_input_tokens: 1200, cache_creation_input_tokens: null },
      },
    ]);
    const logger = capturingLogger();
    const result = await model(server.url, 0, logger).createTurn(request, new AbortController().signal);

    expect(result).toEqual({
      id: 'msg_scripted_0001',
      model: 'claude-opus-4-5',
      content: [
        { type: 'text', text: 'Clicking the button.' },
        { type: 'tool_use', id: 'toolu_b', name: 'computer', input: { action: 'left_click', coordinate: [100, 200] } },
        { type: 'thinking', thinking: 'The button is blue.', signature: 'abc' },
      ],
      stopReason: 'tool_use',
      usage: { inputTokens: 1500, outputTokens: 42, cacheReadInputTokens: 1200, cacheCreationInputTokens: 0 },
      // Opus 4.5, as the Models API describes it: tool-result clearing, no compaction, no adaptive thinking.
      notes: { context: { managed: true, maxInputTokens: 200_000 } },
    });
    expect(server.modelLookups).toEqual(['claude-opus-4-5']);

    expect(server.requests).toHaveLength(1);
    const sent = server.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.url).toMatch(/^\/v1\/messages(\?beta=true)?$/);
    expect(sent.headers['anthropic-beta']).toBe('computer-use-2025-11-24,context-management-2025-06-27');
    // SDK 1.x sends the key as a bearer token; older ones used x-api-key.
    expect(sent.headers.authorization ?? sent.headers['x-api-key']).toMatch(new RegExp(`^(Bearer )?${API_KEY}$`));
    expect(sent.body).toEqual({
      model: 'claude-opus-4-5',
      max_tokens: 2048,
      system: [{ type: 'text', text: 'You operate a browser.', cache_control: { type: 'ephemeral' } }],
      tools: [
        { type: 'computer_20251124', name: 'computer', display_width_px: 1280, display_height_px: 800, enable_zoom: true },
        { name: 'finish', description: 'Ends the run.', input_schema: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } },
      ],
      messages: request.messages,
      context_management: {
        edits: [
          {
            type: 'clear_tool_uses_20250919',
            trigger: { type: 'input_tokens', value: DEFAULT_CONTEXT_SETTINGS.clearTriggerTokens },
            keep: { type: 'tool_uses', value: DEFAULT_CONTEXT_SETTINGS.keepToolUses },
            clear_at_least: { type: 'input_tokens', value: DEFAULT_CONTEXT_SETTINGS.clearAtLeastTokens },
            clear_tool_inputs: false,
          },
        ],
      },
    });
    // The beta list travels as a header, not in the body.
    expect(sent.rawBody).not.toContain('betas');
    expect(logger.lines.join('\n')).not.toContain(API_KEY);
  });

  describe('on a model with preserved thinking (the scripted server runs the prefix check)', () => {
    const fable: ModelTurnRequest = {
      model: 'claude-fable-5-2',
      system: [{ type: 'text', text: 'You operate a browser.', cache_control: { type: 'ephemeral' } }],
      tools: [{ type: 'computer_toolset_20260801' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Do the task.', cache_control: { type: 'ephemeral' } }] }],
      maxTokens: 2048,
      betas: [],
    };
    const next = (first: ModelTurnRequest, answer: ModelResponse['content']): ModelTurnRequest => ({
      ...first,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Do the task.' }] },
        { role: 'assistant', content: answer },
        { role: 'user', content: [{ type: 'text', text: 'Go on.', cache_control: { type: 'ephemeral' } }] },
      ],
    });

    it('asks for summarized thinking and the API’s context management, and an append-only request passes', async () => {
      server = await startScriptedModelServer([turn(text('Looking.')), turn(text('Done.'))]);
      const client = model(server.url, 0);
      const first = await client.createTurn(fable, new AbortController().signal);
      expect(first.content[0]).toMatchObject({ type: 'thinking', thinking: 'Turn 1: answering.', signature: expect.stringMatching(/^sig_/) });
      expect(first.notes).toEqual({ context: { managed: true, maxInputTokens: 1_000_000 } });
      await client.createTurn(next(fable, first.content), new AbortController().signal);

      expect(server.refusals).toEqual([]);
      const sent = server.requests[0]!;
      expect(sent.headers['anthropic-beta']).toBe('context-management-2025-06-27,compact-2026-01-12');
      expect((sent.body as Record<string, unknown>).thinking).toEqual({ type: 'adaptive', display: 'summarized' });
      expect((sent.body as { context_management: { edits: unknown[] } }).context_management.edits).toEqual([
        expect.objectContaining({ type: 'clear_tool_uses_20250919' }),
        { type: 'compact_20260112', trigger: { type: 'input_tokens', value: DEFAULT_CONTEXT_SETTINGS.compactTriggerTokens } },
      ]);
      // The Models API was asked once for the two turns.
      expect(server.modelLookups).toEqual(['claude-fable-5-2']);
    });

    it('sends a request the prefix check refused once more with drop_block, and says so', async () => {
      server = await startScriptedModelServer([turn(text('Looking.')), turn(text('Done.'))], { expectRefusals: true });
      const logger = capturingLogger();
      const client = model(server.url, 0, logger);
      const first = await client.createTurn(fable, new AbortController().signal);
      // A changed system prompt after the thinking block: the API refuses the block.
      const edited = { ...next(fable, first.content), system: [{ type: 'text' as const, text: 'You operate a browser. Today is Tuesday.' }] };
      const second = await client.createTurn(edited, new AbortController().signal);

      expect(server.refusals).toEqual([{ index: 1, message: expect.stringContaining('The block is bound to a different conversation') }]);
      expect(second.content.at(-1)).toEqual({ type: 'text', text: 'Done.' });
      expect(second.notes?.prefixMismatch).toMatch(/^invalid_request_error: messages\.1\.content\.0: Invalid `signature`/);
      const retried = server.requests[2]!;
      expect((retried.body as { thinking: unknown }).thinking).toEqual({ type: 'adaptive', display: 'summarized', block_binding: { prefix_mismatch_behavior: 'drop_block' } });
      expect(retried.headers['anthropic-beta']).toContain('thinking-binding-controls-2026-08-01');
      expect(logger.lines.filter((l) => l.includes('"level":"error"'))).toEqual([expect.stringContaining('sent again with drop_block')]);
    });

    it('forces a tool choice only where thinking is off, as the API requires', async () => {
      server = await startScriptedModelServer([turn(toolUseBlock('verify', {})), turn(toolUseBlock('verify', {}))], { expectRefusals: true });
      const client = model(server.url, 0);
      const verify = { name: 'verify', description: 'Say it.', input_schema: { type: 'object', properties: {} } };
      const forced = (base: ModelTurnRequest): ModelTurnRequest => ({ ...base, tools: [verify], messages: [{ role: 'user', content: [{ type: 'text', text: 'Check.' }] }], betas: [], toolChoice: { type: 'tool', name: 'verify' } });
      await client.createTurn(forced(request), new AbortController().signal);
      await client.createTurn(forced(fable), new AbortController().signal);
      expect(server.refusals).toEqual([]);
      // No thinking: the choice is forced. Adaptive thinking: it is not (the caller checks what was called).
      expect((server.requests[0]!.body as Record<string, unknown>).tool_choice).toEqual({ type: 'tool', name: 'verify' });
      expect((server.requests[1]!.body as Record<string, unknown>).thinking).toBeDefined();
      expect((server.requests[1]!.body as Record<string, unknown>).tool_choice).toBeUndefined();
      // The scripted API applies the rule: a forced choice with thinking is refused.
      const refused = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-fable-5-2', max_tokens: 100, thinking: { type: 'adaptive' }, tool_choice: { type: 'tool', name: 'verify' }, tools: [verify], messages: [{ role: 'user', content: 'Check.' }] }) });
      expect(refused.status).toBe(400);
      expect(server.refusals).toEqual([{ index: 2, message: 'Thinking may not be enabled when tool_choice forces tool use.' }]);
    });

    it('fails with model_error when the model refuses the tool version', async () => {
      server = await startScriptedModelServer([turn(text('Looking.'))], { expectRefusals: true });
      const old = { ...fable, tools: [{ type: 'computer_20251124' as const, name: 'computer' as const, display_width_px: 1280, display_height_px: 800 }] };
      const error = await model(server.url, 0).createTurn(old, new AbortController().signal).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'model_error', message: expect.stringMatching(/400.*does not support the tool type 'computer_20251124'/) });
    });
  });

  it('retries a 500 and returns the next answer', async () => {
    server = await startScriptedModelServer([failure(500, { headers: { 'retry-after-ms': '10' } }), computer('screenshot')]);
    const result = await model(server.url, 2).createTurn(request, new AbortController().signal);
    expect(result.content).toEqual([expect.objectContaining({ type: 'tool_use', name: 'computer', input: { action: 'screenshot' } })]);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.headers['x-stainless-retry-count']).toBe('1');
  });

  it('retries 529 (overloaded) and 429 (rate limited)', async () => {
    server = await startScriptedModelServer([
      failure(529, { headers: { 'retry-after': '0.01' } }),
      failure(429, { headers: { 'retry-after': '0.01' } }),
      computer('screenshot'),
    ]);
    const result = await model(server.url, 3).createTurn(request, new AbortController().signal);
    expect(result.stopReason).toBe('tool_use');
    expect(server.requests).toHaveLength(3);
    expect(server.requests.map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '1', '2']);
  });

  it('waits at least what retry-after asks before the next attempt', async () => {
    const arrivals: number[] = [];
    server = await startScriptedModelServer((_req, index) => {
      arrivals.push(performance.now());
      return index === 0 ? failure(429, { headers: { 'retry-after': '1' } }) : computer('screenshot');
    });
    await model(server.url, 1).createTurn(request, new AbortController().signal);
    expect(arrivals).toHaveLength(2);
    // Without the header the SDK's first backoff is at most 500 ms: a gap of a full second
    // can only come from honouring retry-after. (A lower bound; no upper bound is asserted.)
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950);
  });

  it('gives up on a persistent 500 with model_error after maxRetries', async () => {
    server = await startScriptedModelServer(() => failure(500, { headers: { 'retry-after-ms': '5' } }));
    const logger = capturingLogger();
    const error = await model(server.url, 2, logger)
      .createTurn(request, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    expect(error).toMatchObject({ code: 'model_error', message: expect.stringContaining('500') });
    expect((error as Error).message).toContain('after 2 retries');
    expect(server.requests).toHaveLength(3);
    const log = logger.lines.join('\n');
    expect(log).toContain('"status":500');
    expect(log).not.toContain(API_KEY);
  });

  it('fails a 400 with model_error at once, without retrying', async () => {
    server = await startScriptedModelServer(() =>
      failure(400, { body: { type: 'error', error: { type: 'invalid_request_error', message: 'messages: bad shape' } } }),
    );
    const error = await model(server.url, 3)
      .createTurn(request, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'model_error', message: expect.stringMatching(/400.*invalid_request_error: messages: bad shape/) });
    expect(server.requests).toHaveLength(1);
  });

  it('fails a 401 with model_error at once and keeps the key out of the message', async () => {
    server = await startScriptedModelServer(() => failure(401));
    const error = await model(server.url, 3)
      .createTurn(request, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'model_error', message: expect.stringContaining('401') });
    expect((error as Error).message).not.toContain(API_KEY);
    expect(server.requests).toHaveLength(1);
  });

  it('rejects with the signal reason when aborted mid-request', async () => {
    server = await startScriptedModelServer([{ hang: true }]);
    const controller = new AbortController();
    const reason = new ExecutionError('worker_shutdown', 'shutting down');
    const pending = model(server.url, 3).createTurn(request, controller.signal);
    // Abort once the request has reached the server (an event, not a sleep).
    await waitFor(() => server!.requests.length === 1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(server.requests).toHaveLength(1);
  });

  it('rejects with the signal reason when aborted while waiting to retry', async () => {
    server = await startScriptedModelServer(() => failure(529, { headers: { 'retry-after': '30' } }));
    const controller = new AbortController();
    const reason = new ExecutionError('timeout', 'deadline reached');
    const pending = model(server.url, 3).createTurn(request, controller.signal);
    await waitFor(() => server!.requests.length === 1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(server.requests).toHaveLength(1);
  });

  it('retries an attempt that times out, then fails with model_error', async () => {
    server = await startScriptedModelServer(() => delayed(computer('screenshot'), 5_000));
    const client = createAnthropicModel({ apiKey: API_KEY, baseURL: server.url, maxRetries: 1, timeoutMs: 200, logger: capturingLogger() });
    const error = await client.createTurn(request, new AbortController().signal).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'model_error', message: expect.stringContaining('timed out') });
    expect(server.requests).toHaveLength(2);
  });
});

/** Polls a condition on the event loop (used to see a request land on the server). */
async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
