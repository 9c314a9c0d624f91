import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ImageBlock, Message, ModelClient, ModelTurnRequest } from '../../src/model/types.js';
import { createExecutionEvents } from '../../src/execution/events.js';
import { createStepScreenshots } from '../../src/runner/step-screenshots.js';
import { composeModel, tellRequests } from '../../src/runner/model-pipeline.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';
import type { ModelResponse } from '../../src/contract/recording.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const JPEG_A = Buffer.from('ffd8ffe000104a464946aa', 'hex');
const JPEG_B = Buffer.from('ffd8ffe000104a464946bbcc', 'hex');

const image = (data: Buffer, mediaType: ImageBlock['source']['media_type']): ImageBlock => ({ type: 'image', source: { type: 'base64', media_type: mediaType, data: data.toString('base64') } });
const result = (id: string, ...content: ImageBlock[]) => ({ type: 'tool_result' as const, tool_use_id: id, content: [{ type: 'text' as const, text: 'done' }, ...content] });

const response: ModelResponse = { id: 'm', model: 'x', content: [], stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 } };

function setup(dir: string) {
  const events: Array<{ type: string; fields: Record<string, unknown> }> = [];
  const seenAtCall: boolean[] = [];
  const stream = createExecutionEvents({ executionId: 'e1', redact: (v) => v });
  stream.on('step_screenshot', (fields) => events.push({ type: 'step_screenshot', fields }));
  const shots = createStepScreenshots({ dir, logger: createSilentLogger(), events: stream });
  /** A model turn of the execution: its step number is what the next request follows. */
  const turn = (step: number) => stream.emit('model_turn', { step, by: 'model', latencyMs: 1, overheadMs: null, stopReason: 'tool_use', usage: response.usage, toolCalls: [] });
  const inner: ModelClient = {
    async createTurn() {
      // Whether any screenshot file exists when the request is handed on.
      seenAtCall.push(existsSync(path.join(dir, 'steps')));
      return response;
    },
  };
  const model = composeModel(inner, [tellRequests(stream)]);
  const ask = (messages: Message[]) => model.createTurn({ model: 'x', system: [], tools: [], messages, maxTokens: 10, betas: [] } as ModelTurnRequest, new AbortController().signal);
  return { shots, events, ask, seenAtCall, turn, stream };
}

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('step screenshots', () => {
  it('stores the images new in each request under the step the model sees them at, named by media type', async () => {
    const dir = await tempDir('step-shots');
    dirs.push(dir);
    const t = setup(dir);
    const first: Message = { role: 'user', content: [{ type: 'text', text: 'go' }, image(PNG, 'image/png')] };
    await t.ask([first]);
    t.turn(1);

    const second: Message[] = [first, { role: 'assistant', content: [] }, { role: 'user', content: [result('a', image(JPEG_A, 'image/jpeg'))] }];
    await t.ask(second);
    t.turn(2);

    // pause_turn: the same conversation again, nothing new.
    await t.ask([...second, { role: 'assistant', content: [] }]);

    // Several actions in one turn, each with its screenshot.
    await t.ask([...second, { role: 'assistant', content: [] }, { role: 'user', content: [result('b', image(JPEG_A, 'image/jpeg')), result('c', image(JPEG_B, 'image/jpeg'))] }]);
    t.turn(3);

    // Steps replayed from a run cache make no model call: the next model step keeps its number.
    t.stream.emit('replayed_step', { step: 7, by: 'cache', actions: 1 });
    await t.ask([{ role: 'user', content: [result('d', image(JPEG_B, 'image/jpeg'))] }]);

    // A turn with no image (a nudge) stores nothing.
    await t.ask([{ role: 'user', content: [{ type: 'text', text: 'call finish' }] }]);

    const files = await t.shots.files();
    expect(files.map((f) => f.name)).toEqual(['steps/001.png', 'steps/002.jpg', 'steps/003-1.jpg', 'steps/003-2.jpg', 'steps/008.jpg']);
    expect(files.map((f) => f.contentType)).toEqual(['image/png', 'image/jpeg', 'image/jpeg', 'image/jpeg', 'image/jpeg']);
    expect(await readFile(path.join(dir, 'steps', '001.png'))).toEqual(PNG);
    expect(await readFile(path.join(dir, 'steps', '003-2.jpg'))).toEqual(JPEG_B);
    expect(t.events).toEqual([
      { type: 'step_screenshot', fields: { step: 1, key: 'steps/001.png', bytes: PNG.length, mediaType: 'image/png' } },
      { type: 'step_screenshot', fields: { step: 2, key: 'steps/002.jpg', bytes: JPEG_A.length, mediaType: 'image/jpeg' } },
      { type: 'step_screenshot', fields: { step: 3, key: 'steps/003-1.jpg', bytes: JPEG_A.length, mediaType: 'image/jpeg' } },
      { type: 'step_screenshot', fields: { step: 3, key: 'steps/003-2.jpg', bytes: JPEG_B.length, mediaType: 'image/jpeg' } },
      { type: 'step_screenshot', fields: { step: 8, key: 'steps/008.jpg', bytes: JPEG_B.length, mediaType: 'image/jpeg' } },
    ]);
    // The first request went out before its screenshot was written.
    expect(t.seenAtCall[0]).toBe(false);
  });

  it('leaves out a screenshot it could not write, and the run goes on', async () => {
    const dir = await tempDir('step-shots');
    dirs.push(dir);
    const t = setup(path.join(dir, 'missing', '\0bad'));
    await expect(t.ask([{ role: 'user', content: [image(PNG, 'image/png')] }])).resolves.toBe(response);
    expect(await t.shots.files()).toEqual([]);
  });
});
