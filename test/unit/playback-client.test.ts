import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError } from '../../src/contract/errors.js';
import { createRecordingModel } from '../../src/model/recording-client.js';
import { createPlaybackModel, loadRecording, parseRecording } from '../../src/model/playback-client.js';
import type { ModelClient, ModelTurnRequest } from '../../src/model/types.js';
import type { ModelResponse, RecordingFile } from '../../src/contract/recording.js';

const request: ModelTurnRequest = {
  model: 'claude-sonnet-4-5',
  system: [{ type: 'text', text: 'system' }],
  tools: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
  maxTokens: 1024,
  betas: [],
};

function response(n: number, content: ModelResponse['content']): ModelResponse {
  return {
    id: `msg_${n}`,
    model: 'claude-sonnet-4-5',
    content,
    stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
    usage: { inputTokens: 10 * n, outputTokens: n, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
  };
}

const recording: RecordingFile = {
  format: 'execution-worker/recording@1',
  model: 'claude-sonnet-4-5',
  toolVersion: 'computer_20250124',
  display: { width: 1280, height: 800 },
  turns: [
    { latencyMs: 120, response: response(1, [{ type: 'tool_use', id: 'toolu_1', name: 'computer', input: { action: 'screenshot' } }]) },
    {
      latencyMs: 80,
      response: response(2, [
        { type: 'thinking', thinking: 'hmm', signature: 'sig' },
        { type: 'tool_use', id: 'toolu_2', name: 'finish', input: { status: 'completed', output: { ok: true } } },
      ]),
    },
  ],
};

const live = new AbortController().signal;

describe('createPlaybackModel', () => {
  it('returns the recorded responses in order, then fails with model_error', async () => {
    const model = createPlaybackModel(recording);
    expect(await model.createTurn(request, live)).toEqual(recording.turns[0]!.response);
    expect(await model.createTurn(request, live)).toEqual(recording.turns[1]!.response);
    const third = model.createTurn(request, live);
    await expect(third).rejects.toBeInstanceOf(ExecutionError);
    await expect(third).rejects.toMatchObject({ code: 'model_error', message: expect.stringContaining('the recording has no turn 3') });
  });

  it('hands out copies: editing a response leaves the recording intact', async () => {
    const model = createPlaybackModel(recording);
    const first = await model.createTurn(request, live);
    first.content.length = 0;
    expect(recording.turns[0]!.response.content).toHaveLength(1);
  });

  it('rejects with the signal reason when aborted', async () => {
    const controller = new AbortController();
    const reason = new ExecutionError('timeout', 'deadline');
    controller.abort(reason);
    await expect(createPlaybackModel(recording).createTurn(request, controller.signal)).rejects.toBe(reason);
  });
});

describe('createRecordingModel', () => {
  it('records each response with its latency and replays to the same responses', async () => {
    let n = 0;
    const inner: ModelClient = {
      createTurn: async () => response(++n, [{ type: 'text', text: `turn ${n}` }]),
    };
    const model = createRecordingModel(inner, { model: 'claude-opus-4-5', toolVersion: 'computer_20251124', display: { width: 1024, height: 768 } });
    const a = await model.createTurn(request, live);
    const b = await model.createTurn(request, live);
    const file = model.recording();
    expect(file).toMatchObject({ format: 'execution-worker/recording@1', model: 'claude-opus-4-5', toolVersion: 'computer_20251124', display: { width: 1024, height: 768 } });
    expect(file.turns.map((t) => t.response)).toEqual([a, b]);
    for (const t of file.turns) expect(t.latencyMs).toBeGreaterThanOrEqual(0);

    const replay = createPlaybackModel(JSON.parse(JSON.stringify(file)) as RecordingFile);
    expect(await replay.createTurn(request, live)).toEqual(a);
    expect(await replay.createTurn(request, live)).toEqual(b);
  });

  it('does not record failed turns and passes the error through', async () => {
    const boom = new ExecutionError('model_error', 'overloaded');
    const inner: ModelClient = { createTurn: async () => Promise.reject(boom) };
    const model = createRecordingModel(inner, { model: 'm', toolVersion: 'computer_20250124', display: { width: 1, height: 1 } });
    await expect(model.createTurn(request, live)).rejects.toBe(boom);
    expect(model.recording().turns).toEqual([]);
  });

  it('returns a snapshot that later turns do not change', async () => {
    const inner: ModelClient = { createTurn: async () => response(1, [{ type: 'text', text: 'x' }]) };
    const model = createRecordingModel(inner, { model: 'm', toolVersion: 'computer_20250124', display: { width: 1, height: 1 } });
    await model.createTurn(request, live);
    const snapshot = model.recording();
    await model.createTurn(request, live);
    expect(snapshot.turns).toHaveLength(1);
    expect(model.recording().turns).toHaveLength(2);
  });
});

describe('loadRecording', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'replay-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const write = async (name: string, content: string) => {
    const file = path.join(dir, name);
    await writeFile(file, content);
    return file;
  };

  it('loads a valid recording', async () => {
    const file = await write('ok.json', JSON.stringify(recording));
    expect(await loadRecording(file)).toEqual(recording);
  });

  it('names a missing file', async () => {
    await expect(loadRecording(path.join(dir, 'absent.json'))).rejects.toThrow(/cannot read the recording .*absent\.json/);
  });

  it('names invalid JSON', async () => {
    const file = await write('bad.json', '{ nope');
    await expect(loadRecording(file)).rejects.toThrow(/is not valid JSON/);
  });

  it.each([
    ['a wrong format', { ...recording, format: 'something@2' }, /format must be "execution-worker\/recording@1"/],
    ['no model', { ...recording, model: '' }, /model must be a non-empty string/],
    ['a bad display', { ...recording, display: { width: 0, height: 800 } }, /display must be/],
    ['turns not an array', { ...recording, turns: {} }, /turns must be an array/],
    ['a negative latency', { ...recording, turns: [{ ...recording.turns[0], latencyMs: -1 }] }, /turns\[0\]\.latencyMs/],
    [
      'a tool_use without id',
      { ...recording, turns: [{ latencyMs: 1, response: { ...recording.turns[0]!.response, content: [{ type: 'tool_use', name: 'computer', input: {} }] } }] },
      /turns\[0\]\.response\.content\[0\] a tool_use block needs/,
    ],
    [
      'usage missing a counter',
      { ...recording, turns: [{ latencyMs: 1, response: { ...recording.turns[0]!.response, usage: { inputTokens: 1 } } }] },
      /turns\[0\]\.response\.usage\.outputTokens must be a number/,
    ],
  ])('rejects %s with a clear message', async (_label, content, pattern) => {
    const file = await write(`invalid-${Math.random().toString(36).slice(2)}.json`, JSON.stringify(content));
    await expect(loadRecording(file)).rejects.toThrow(pattern);
  });
});

describe('parseRecording, for any recording', () => {
  const text = fc.record({ type: fc.constant('text' as const), text: fc.string() });
  const toolUse = fc.record(
    { type: fc.constant('tool_use' as const), id: fc.string({ minLength: 1 }), name: fc.string({ minLength: 1 }), input: fc.jsonValue(), toolset_name: fc.constantFrom('browser', 'computer') },
    { requiredKeys: ['type', 'id', 'name', 'input'] },
  );
  // A block the worker does not interpret, with whatever fields the API gave it.
  const opaque = fc
    .tuple(fc.constantFrom('thinking', 'redacted_thinking', 'server_tool_use', 'new_kind'), fc.dictionary(fc.string().filter((k) => k !== 'type' && k !== '__proto__'), fc.jsonValue(), { maxKeys: 3 }))
    .map(([type, fields]) => ({ ...fields, type }));
  const count = fc.nat();
  const turn = fc.record({
    latencyMs: fc.nat(),
    response: fc.record({
      id: fc.string(),
      model: fc.string(),
      content: fc.array(fc.oneof(text, toolUse, opaque), { maxLength: 4 }),
      stopReason: fc.constantFrom('end_turn', 'tool_use', 'max_tokens', 'pause_turn'),
      usage: fc.record({ inputTokens: count, outputTokens: count, cacheReadInputTokens: count, cacheCreationInputTokens: count }),
    }),
  });
  const anyRecording = fc.record({
    format: fc.constant('execution-worker/recording@1' as const),
    model: fc.string({ minLength: 1 }),
    toolVersion: fc.constantFrom('browser_toolset_20260801', 'computer_20251124'),
    display: fc.record({ width: fc.integer({ min: 1, max: 4000 }), height: fc.integer({ min: 1, max: 4000 }) }),
    turns: fc.array(turn, { maxLength: 4 }),
  });

  it('reads back what was written, blocks it does not interpret kept whole', () => {
    fc.assert(
      fc.property(anyRecording, (written) => {
        const read = JSON.parse(JSON.stringify(written)) as unknown;
        expect(parseRecording(read)).toEqual(read);
      }),
    );
  });

  it('refuses a recording with one field of a turn taken away, naming it', () => {
    const fields = ['latencyMs', 'response', 'response.id', 'response.model', 'response.content', 'response.stopReason', 'response.usage', 'response.usage.outputTokens'];
    fc.assert(
      fc.property(anyRecording.filter((r) => r.turns.length > 0), fc.constantFrom(...fields), (written, field) => {
        const broken = JSON.parse(JSON.stringify(written)) as { turns: Array<Record<string, Record<string, unknown>>> };
        const keys = field.split('.');
        let holder: Record<string, unknown> = broken.turns[0]!;
        for (const key of keys.slice(0, -1)) holder = holder[key] as Record<string, unknown>;
        delete holder[keys.at(-1)!];
        const where = `turns[0].${field}`;
        expect(() => parseRecording(broken)).toThrow(`: ${where} `);
      }),
    );
  });
});
