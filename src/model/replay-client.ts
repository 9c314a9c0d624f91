import { readFile } from 'node:fs/promises';
import { ExecutionError } from '../domain/errors.js';
import type { ModelClient, ModelResponse, RecordedTurn, RecordingFile } from './types.js';

/**
 * The replaying model (docs/operations.md#replaying-a-recording): answers each turn with the next recorded response, in
 * order, whatever it is asked. It never waits the recorded latency: a replay runs as fast as
 * the browser allows.
 */

export const RECORDING_FORMAT = 'execution-worker/recording@1';

export function createReplayModel(recording: RecordingFile): ModelClient {
  let next = 0;
  return {
    async createTurn(_request, signal): Promise<ModelResponse> {
      if (signal.aborted) throw signal.reason;
      const index = next;
      const turn = recording.turns[index];
      if (!turn) {
        throw new ExecutionError('model_error', `the recording has no turn ${index + 1} (it holds ${recording.turns.length})`);
      }
      next += 1;
      // A deep copy, so a caller that edits the response cannot change the recording.
      return structuredClone(turn.response);
    },
  };
}

/** Reads and validates a `recording.json`; throws an Error naming the first fault. */
export async function loadRecording(path: string): Promise<RecordingFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the recording ${path}: ${(error as Error).message}`, { cause: error });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`the recording ${path} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  return parseRecording(raw, path);
}

/** Validates a recording already parsed from JSON. */
export function parseRecording(raw: unknown, source = 'recording'): RecordingFile {
  const fail = (where: string, what: string): never => {
    throw new Error(`invalid recording ${source}: ${where} ${what}`);
  };
  if (!isObject(raw)) return fail('(root)', 'must be a JSON object');
  if (raw.format !== RECORDING_FORMAT) {
    fail('format', `must be "${RECORDING_FORMAT}" (found ${JSON.stringify(raw.format ?? null)})`);
  }
  if (typeof raw.model !== 'string' || raw.model === '') fail('model', 'must be a non-empty string');
  if (typeof raw.toolVersion !== 'string' || raw.toolVersion === '') fail('toolVersion', 'must be a non-empty string');
  const display = raw.display;
  if (!isObject(display) || !isPositiveInt(display.width) || !isPositiveInt(display.height)) {
    fail('display', 'must be { width, height } in whole pixels');
  }
  if (!Array.isArray(raw.turns)) return fail('turns', 'must be an array');
  raw.turns.forEach((turn: unknown, i: number) => checkTurn(turn, `turns[${i}]`, fail));
  return raw as unknown as RecordingFile;
}

function checkTurn(turn: unknown, at: string, fail: (where: string, what: string) => never): asserts turn is RecordedTurn {
  if (!isObject(turn)) fail(at, 'must be an object');
  const t = turn as Record<string, unknown>;
  if (typeof t.latencyMs !== 'number' || !Number.isFinite(t.latencyMs) || t.latencyMs < 0) {
    fail(`${at}.latencyMs`, 'must be a number ≥ 0');
  }
  const response = t.response;
  if (!isObject(response)) return fail(`${at}.response`, 'must be an object');
  if (typeof response.id !== 'string') fail(`${at}.response.id`, 'must be a string');
  if (typeof response.model !== 'string') fail(`${at}.response.model`, 'must be a string');
  if (typeof response.stopReason !== 'string') fail(`${at}.response.stopReason`, 'must be a string');
  if (!Array.isArray(response.content)) return fail(`${at}.response.content`, 'must be an array');
  response.content.forEach((block: unknown, j: number) => {
    const where = `${at}.response.content[${j}]`;
    if (!isObject(block) || typeof block.type !== 'string') return fail(where, 'must be an object with a string "type"');
    if (block.type === 'text' && typeof block.text !== 'string') fail(`${where}.text`, 'must be a string');
    if (block.type === 'tool_use' && (typeof block.id !== 'string' || typeof block.name !== 'string' || !('input' in block))) {
      fail(where, 'a tool_use block needs a string id, a string name and an input');
    }
  });
  const usage = response.usage;
  if (!isObject(usage)) return fail(`${at}.response.usage`, 'must be an object');
  for (const key of ['inputTokens', 'outputTokens', 'cacheReadInputTokens', 'cacheCreationInputTokens']) {
    if (typeof usage[key] !== 'number') fail(`${at}.response.usage.${key}`, 'must be a number');
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isPositiveInt(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}
