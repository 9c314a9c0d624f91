import { RECORDING_FORMAT, type ModelResponse, type RecordedTurn, type RecordingFile } from '../contract/recording.js';
import type { ModelClient } from './types.js';

/**
 * Wraps a model and keeps every response it gives, with its latency, so the run can be
 * written out as `recording.json` (docs/counters-and-artifacts.md#artifacts) and played back without a model (docs/operations.md#playing-back-a-recording). Failed
 * turns are not recorded: a playback starts from what the run actually received.
 */

export interface RecordingMeta {
  model: string;
  toolVersion: string;
  display: { width: number; height: number };
}

export type RecordingModelClient = ModelClient & {
  /** A snapshot of the turns so far, safe to serialise while the run goes on. */
  recording(): RecordingFile;
};

export function createRecordingModel(inner: ModelClient, meta: RecordingMeta): RecordingModelClient {
  const turns: RecordedTurn[] = [];
  return {
    async createTurn(request, signal): Promise<ModelResponse> {
      const started = performance.now();
      const response = await inner.createTurn(request, signal);
      const latencyMs = Math.round(performance.now() - started);
      turns.push({ latencyMs, response: structuredClone(response) });
      return response;
    },
    recording(): RecordingFile {
      return {
        format: RECORDING_FORMAT,
        model: meta.model,
        toolVersion: meta.toolVersion,
        display: { width: meta.display.width, height: meta.display.height },
        turns: structuredClone(turns),
      };
    },
  };
}
