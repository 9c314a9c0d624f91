import type { Redis } from 'ioredis';
import { cancellable } from '../domain/cancel.js';

/** A Redis that does not answer PING within this is reported unready (docs/operations.md#health-and-metrics). */
export const PING_TIMEOUT_MS = 2_000;

/**
 * Whether `connection`'s Redis answers PING within PING_TIMEOUT_MS, or before `signal` fires.
 * A connection that is not ready answers false at once: its commands would wait in ioredis's
 * offline queue. ioredis cannot take a command back: a PING given up on waits for its answer (or
 * the connection's end) and is then dropped; nothing else is left behind.
 */
export async function pingRedis(connection: Redis, signal: AbortSignal): Promise<boolean> {
  if (connection.status !== 'ready') return false;
  try {
    return (await cancellable(AbortSignal.any([signal, AbortSignal.timeout(PING_TIMEOUT_MS)]), () => connection.ping())) === 'PONG';
  } catch {
    // No answer in time, or an error answer: either way Redis is not serving this worker.
    return false;
  }
}
