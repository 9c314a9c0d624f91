import { RECORDING_FORMAT, type ModelResponse, type RecordedTurn, type RecordingFile } from '../contract/recording.js';
import type { ModelClient, ModelInterceptor } from './types.js';

/**
 * Keeps every response the model gives, with its latency, so the run can be written out as `recording.json` (docs/counters-and-artifacts.md#artifacts) and played back without a model (docs/operations.md#playing-back-a-recording). Failed
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

export interface TurnRecorder {
  /** The pipeline's stage (model/types.ts `ModelInterceptor`), next to the model: the latency is the model's own. */
  intercept: ModelInterceptor;
  /** A snapshot of the turns so far, safe to serialise while the run goes on. */
  recording(): RecordingFile;
}

/** The recording of one execution, as a stage of its model pipeline. */
export function recordTurns(meta: RecordingMeta): TurnRecorder {
  const turns: RecordedTurn[] = [];
  return {
    async intercept(request, signal, next): Promise<ModelResponse> {
      const started = performance.now();
      const response = await next(request, signal);
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

/** A model with its recording alone (a recording made outside a run). */
export function createRecordingModel(inner: ModelClient, meta: RecordingMeta): RecordingModelClient {
  const recorder = recordTurns(meta);
  return { createTurn: (request, signal) => recorder.intercept(request, signal, (sent, s) => inner.createTurn(sent, s)), recording: recorder.recording };
}
