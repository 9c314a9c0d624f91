import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisOptions } from '../domain/redis-address.js';
import { errorFromSignal } from '../domain/errors.js';
import { answersStreamKey, parseAnswer, parseInput } from '../domain/human-protocol.js';
import type { Logger } from '../telemetry/types.js';
import type { HumanDesk } from './types.js';

/**
 * The people port over a Redis stream per execution (docs/human-in-the-loop.md#the-answers-stream).
 *
 * Each wait reads with a blocking XREAD on a connection of its own, so a wait of an hour holds
 * no shared connection and costs no polling; the run's abort signal closes that connection,
 * which ends the read at once. A Redis that drops the connection mid-wait is read again (with
 * what is left of the timeout) from the last entry seen: no entry is missed or read twice.
 */

/** Pause before reading again after Redis failed a read that was not aborted. */
const RETRY_AFTER_ERROR_MS = 1_000;

export function createRedisHumanDesk(options: { redisUrl: string; queuePrefix: string; queueName: string; logger: Logger }): HumanDesk {
  const log = options.logger.child({ component: 'human' });
  const key = (id: string) => answersStreamKey(options.queuePrefix, options.queueName, id);
  let shared: Redis | undefined;
  const connection = () => {
    if (!shared) {
      shared = new Redis(redisOptions(options.redisUrl, { maxRetriesPerRequest: 3 }));
      shared.on('error', (error: Error) => log.warn({ err: error.message }, 'answers stream: redis connection error'));
    }
    return shared;
  };

  return {
    async mark(executionId) {
      const last = (await connection().xrevrange(key(executionId), '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
      return last[0]?.[0] ?? '0-0';
    },

    async wait({ executionId, after, timeoutMs, onInput, signal }) {
      if (signal.aborted) throw errorFromSignal(signal);
      const reader = new Redis(redisOptions(options.redisUrl, { maxRetriesPerRequest: null }));
      reader.on('error', (error: Error) => log.warn({ executionId, err: error.message }, 'answers stream: redis connection error while waiting'));
      const hangUp = () => reader.disconnect();
      signal.addEventListener('abort', hangUp, { once: true });
      const deadline = Date.now() + timeoutMs;
      let cursor = after;
      try {
        for (;;) {
          const left = deadline - Date.now();
          if (left <= 0) return undefined;
          let reply: Array<[string, Array<[string, string[]]>]> | null;
          try {
            reply = (await reader.xread('COUNT', 100, 'BLOCK', left, 'STREAMS', key(executionId), cursor)) as typeof reply;
          } catch (error) {
            if (signal.aborted) throw errorFromSignal(signal);
            log.warn({ executionId, err: String(error) }, 'answers stream: read failed; reading again');
            await delay(Math.min(RETRY_AFTER_ERROR_MS, Math.max(0, deadline - Date.now())));
            continue;
          }
          for (const [, entries] of reply ?? []) {
            for (const [id, fields] of entries) {
              cursor = id;
              const field = fieldsOf(fields);
              if (field.answer !== undefined) {
                const answer = parseAnswer(field.answer);
                if (answer) return { ...answer, id };
                log.warn({ executionId, entry: id }, 'answers stream: an answer that is not {"answer": string} was ignored');
              } else if (field.input !== undefined) {
                const input = parseInput(field.input);
                if (input) await onInput(input);
                else log.warn({ executionId, entry: id }, 'answers stream: a malformed input was ignored');
              }
              if (signal.aborted) throw errorFromSignal(signal);
            }
          }
        }
      } finally {
        signal.removeEventListener('abort', hangUp);
        reader.disconnect();
      }
    },

    async release(executionId, after) {
      try {
        const left = (await connection().xrange(key(executionId), after ? `(${after}` : '-', '+')) as Array<[string, string[]]>;
        for (const [id, fields] of left) {
          if (fieldsOf(fields).answer !== undefined) log.info({ executionId, entry: id }, 'answer ignored: the question was already answered or the execution ended');
        }
        await connection().del(key(executionId));
      } catch (error) {
        log.warn({ executionId, err: String(error) }, 'answers stream could not be cleared');
      }
    },

    async close() {
      const open = shared;
      shared = undefined;
      if (open) await open.quit().catch(() => open.disconnect());
    },
  };
}

function fieldsOf(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}
