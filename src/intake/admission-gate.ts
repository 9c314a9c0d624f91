import type { Logger } from '../telemetry/types.js';
import type { Admission } from './types.js';

/**
 * Admission by capacity in the queue worker (docs/operations.md#admission-by-capacity). Without
 * room the worker fetches no more jobs than run now: BullMQ's concurrency is lowered to the
 * executions running, and raised again when one ends or memory frees up (looked at every
 * `recheckMs` besides). A job fetched in the instant before the room went is handed back by the
 * intake (`hasRoom` false), untouched, for a worker with room.
 */

/** The one setting of BullMQ's worker the gate turns. */
export interface ConcurrencyDial {
  concurrency: number;
}

export interface AdmissionGate {
  /** Room for one more beside those running; always true without an admission. */
  hasRoom(): boolean;
  /** Sets the worker's concurrency to what the room allows now. */
  adjust(): void;
  close(): void;
}

export function createAdmissionGate(options: {
  admission: Admission | undefined;
  concurrency: number;
  dial: ConcurrencyDial;
  /** Executions running now. */
  active: () => number;
  logger: Logger;
  recheckMs: number;
}): AdmissionGate {
  const { admission, concurrency, dial, active, logger } = options;
  if (!admission) return { hasRoom: () => true, adjust: () => undefined, close: () => undefined };
  const adjust = () => {
    const running = active();
    const want = admission.hasRoom(running) ? concurrency : Math.max(1, running);
    if (dial.concurrency === want) return;
    logger.info({ active: running, concurrency: want }, want < concurrency ? 'no room for more executions: taking none until there is' : 'room again: taking executions');
    dial.concurrency = want;
  };
  const recheck = setInterval(adjust, options.recheckMs);
  recheck.unref();
  return {
    hasRoom: () => admission.hasRoom(active()),
    adjust,
    close: () => clearInterval(recheck),
  };
}
