import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { recordingFile, type ModelResponse, type RecordingFile } from '../contract/recording.js';
import { ExecutionError } from '../contract/errors.js';
import type { ModelClient } from './types.js';

/**
 * The playback model (docs/operations.md#playing-back-a-recording): answers each turn with the next recorded response, in
 * order, whatever it is asked. It never waits the recorded latency: a playback runs as fast as
 * the browser allows.
 */

export function createPlaybackModel(recording: RecordingFile): ModelClient {
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

/** Validates a recording already parsed from JSON (contract/recording.ts); the error names the first fault. */
export function parseRecording(raw: unknown, source = 'recording'): RecordingFile {
  const parsed = recordingFile.safeParse(raw);
  if (parsed.success) return parsed.data;
  const [first] = parsed.error.issues;
  throw new Error(`invalid recording ${source}: ${first ? `${where(first.path)} ${first.message}` : 'is not a recording'}`);
}

/** A fault's place as a reader of the file would write it: `turns[0].response.usage`, `(root)` for the file itself. */
function where(path: z.core.$ZodIssue['path']): string {
  if (path.length === 0) return '(root)';
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');
}
