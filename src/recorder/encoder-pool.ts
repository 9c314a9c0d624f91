import type { Logger } from '../telemetry/types.js';
import { encoderKey, startSharedEncoder, type EncoderLease, type SharedEncoder, type SharedEncoderSpec } from './shared-encoder.js';

/**
 * The worker's warm encoders (docs/operations.md#shared-video-encoder): one per recording
 * running at once, each used by one recording at a time, reused by the next recording of the
 * same size, frame rate and quality. Started when a recording needs one, ended after
 * `idleMs` unused and when the worker closes.
 */

export interface EncoderPool {
  /** A free encoder for `spec` (started if none is), leased for one recording. */
  lease(spec: Omit<SharedEncoderSpec, 'logger'>, outputPath: string, log: Logger): EncoderLease;
  /** Ends every encoder; resolves once none is running. */
  close(): Promise<void>;
  /** Encoders running now (for tests and metrics). */
  readonly size: number;
}

export function createEncoderPool(options: { logger: Logger; idleMs: number }): EncoderPool {
  const encoders = new Set<SharedEncoder>();
  const idleTimers = new Map<SharedEncoder, NodeJS.Timeout>();
  let closed = false;

  const stopIdleTimer = (encoder: SharedEncoder): void => {
    clearTimeout(idleTimers.get(encoder));
    idleTimers.delete(encoder);
  };

  const start = (spec: Omit<SharedEncoderSpec, 'logger'>): SharedEncoder => {
    const encoder = startSharedEncoder({ ...spec, logger: options.logger });
    encoders.add(encoder);
    encoder.onChange((event) => {
      stopIdleTimer(encoder);
      if (event === 'exited') {
        encoders.delete(encoder);
        return;
      }
      if (!encoder.usable) {
        encoders.delete(encoder);
        void encoder.close();
        return;
      }
      const timer = setTimeout(() => {
        idleTimers.delete(encoder);
        encoders.delete(encoder);
        void encoder.close();
      }, options.idleMs);
      timer.unref();
      idleTimers.set(encoder, timer);
    });
    return encoder;
  };

  return {
    lease(spec, outputPath, log) {
      if (closed) throw new Error('the video encoders are closed');
      const key = encoderKey(spec);
      let encoder = [...encoders].find((candidate) => candidate.key === key && candidate.usable && !candidate.busy);
      if (encoder) stopIdleTimer(encoder);
      encoder ??= start(spec);
      return encoder.lease(outputPath, log);
    },
    async close() {
      closed = true;
      for (const encoder of idleTimers.keys()) stopIdleTimer(encoder);
      const all = [...encoders];
      encoders.clear();
      await Promise.all(all.map((encoder) => encoder.close()));
    },
    get size() {
      return encoders.size;
    },
  };
}
