import { EventEmitter, once } from 'node:events';
import { Redis } from 'ioredis';
import { redisOptions } from '../domain/redis-address.js';
import { errorFromSignal } from '../contract/errors.js';
import { ANSWERS_STREAM_GRACE_MS, answersStreamKey, parseAnswer, parseInput } from '../domain/human-protocol.js';
import type { Logger } from '../telemetry/types.js';
import { createStreamFollower, type StreamEntry, type StreamFollower } from './stream-follower.js';
import type { HumanDesk } from './types.js';

/**
 * The people port over a Redis stream per execution (docs/human-in-the-loop.md#the-answers-stream).
 *
 * A worker process holds two connections for it, however many of its runs wait: one for
 * commands (where a stream stands, its expiry, its removal) and one reader whose single
 * blocking XREAD serves every waiting run (stream-follower.ts). A wait is a cursor and a timer;
 * the run's abort signal ends it at once. A Redis that drops the reader mid-wait is read again
 * from each run's last entry seen once it is back: no entry is missed or read twice.
 */

/** Connection names, so `CLIENT LIST` shows what each of the worker's connections is for. */
export const ANSWERS_CONNECTION_NAME = 'execution-worker:answers';
export const ANSWERS_READER_CONNECTION_NAME = 'execution-worker:answers-reader';

/** The in-process event that wakes a wait when entries arrive (not an execution event). */
const ARRIVED = 'arrived';

export function createRedisHumanDesk(options: { redisUrl: string; queuePrefix: string; queueName: string; logger: Logger; blockMs?: number }): HumanDesk {
  const log = options.logger.child({ component: 'human' });
  const key = (id: string) => answersStreamKey(options.queuePrefix, options.queueName, id);
  // Both connections open on first use: a worker whose runs never ask a person opens none.
  let commands: Redis | undefined;
  let follower: StreamFollower | undefined;
  const connection = () => {
    if (!commands) {
      commands = new Redis(redisOptions(options.redisUrl, { maxRetriesPerRequest: 3, connectionName: ANSWERS_CONNECTION_NAME }));
      commands.on('error', (error: Error) => log.warn({ err: error.message }, 'answers stream: redis connection error'));
    }
    return commands;
  };
  const reader = () => {
    if (!follower) {
      // No retry limit: a read blocked while Redis is away waits for it to come back.
      const redis = new Redis(redisOptions(options.redisUrl, { maxRetriesPerRequest: null, connectionName: ANSWERS_READER_CONNECTION_NAME }));
      redis.on('error', (error: Error) => log.warn({ err: error.message }, 'answers streams reader: redis connection error'));
      follower = createStreamFollower({ reader: redis, logger: log, ...(options.blockMs === undefined ? {} : { blockMs: options.blockMs }) });
    }
    return follower;
  };

  /** Answers after `since` that no wait took: a second answer to a question, or one after the run stopped waiting. */
  const logIgnored = (executionId: string, entries: StreamEntry[]) => {
    for (const [id, fields] of entries) {
      if (fieldsOf(fields).has('answer')) log.info({ executionId, entry: id }, 'answer ignored: the question was already answered or the execution ended');
    }
  };

  return {
    async mark(executionId, since) {
      if (since === undefined) {
        const last = (await connection().xrevrange(key(executionId), '+', '-', 'COUNT', 1)) as StreamEntry[];
        return last[0]?.[0] ?? '0-0';
      }
      const unread = (await connection().xrange(key(executionId), `(${since}`, '+')) as StreamEntry[];
      logIgnored(executionId, unread);
      return unread.at(-1)?.[0] ?? since;
    },

    async wait({ executionId, after, timeoutMs, onInput, signal }) {
      if (signal.aborted) throw errorFromSignal(signal);
      const stream = key(executionId);
      const deadline = Date.now() + timeoutMs;
      // The stream lives until the deadline and a grace more, whoever writes to it
      // (docs/human-in-the-loop.md#the-answers-stream): set now, and again on each arrival.
      const refreshExpiry = () =>
        void connection()
          .pexpire(stream, Math.max(0, deadline - Date.now()) + ANSWERS_STREAM_GRACE_MS)
          .catch((error: unknown) => log.warn({ executionId, err: String(error) }, 'answers stream: its expiry could not be set'));
      refreshExpiry();

      const pending: StreamEntry[] = [];
      let failure: Error | undefined;
      const arrivals = new EventEmitter();
      const timeout = timeoutSignal(timeoutMs);
      const ended = AbortSignal.any([signal, timeout.signal]);
      const stop = reader().follow(
        stream,
        after,
        (entries) => {
          pending.push(...entries);
          refreshExpiry();
          arrivals.emit(ARRIVED);
        },
        (error) => {
          failure = error;
          arrivals.emit(ARRIVED);
        },
      );
      try {
        for (;;) {
          for (let entry = pending.shift(); entry; entry = pending.shift()) {
            if (signal.aborted) throw errorFromSignal(signal);
            if (timeout.signal.aborted) return undefined;
            const [id, fields] = entry;
            const field = fieldsOf(fields);
            const answerText = field.get('answer');
            const inputText = field.get('input');
            if (answerText !== undefined) {
              const answer = parseAnswer(answerText);
              if (answer) return { ...answer, id };
              log.warn({ executionId, entry: id }, 'answers stream: an answer that is not {"answer": string, "decision"?: "approve" | "deny"} was ignored');
            } else if (inputText !== undefined) {
              const input = parseInput(inputText);
              if (input) await onInput(input);
              else log.warn({ executionId, entry: id }, 'answers stream: a malformed input was ignored');
            }
          }
          if (failure) throw failure;
          try {
            await once(arrivals, ARRIVED, { signal: ended });
          } catch (error) {
            if (signal.aborted) throw errorFromSignal(signal);
            if (timeout.signal.aborted) return undefined;
            throw error;
          }
        }
      } finally {
        stop();
        timeout.clear();
      }
    },

    async release(executionId, after) {
      try {
        const left = (await connection().xrange(key(executionId), after ? `(${after}` : '-', '+')) as StreamEntry[];
        logIgnored(executionId, left);
        await connection().del(key(executionId));
      } catch (error) {
        log.warn({ executionId, err: String(error) }, 'answers stream could not be cleared');
      }
    },

    async close() {
      const open = commands;
      commands = undefined;
      const reading = follower;
      follower = undefined;
      await Promise.allSettled([reading?.close(), open?.quit().catch(() => open.disconnect())]);
    },
  };
}

/** Node's timers (and `AbortSignal.timeout`) fire at once past this; a wait may last 30 days. */
const LONGEST_TIMER_MS = 2_147_483_647;

/** A signal that aborts after `ms`, however long, and a way to stop its timer. */
function timeoutSignal(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const end = Date.now() + ms;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const left = end - Date.now();
    if (left <= 0) return controller.abort();
    timer = setTimeout(arm, Math.min(left, LONGEST_TIMER_MS));
  };
  arm();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** An entry's fields by name (a Map: the names are whoever wrote the entry's). */
function fieldsOf(flat: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) if (!out.has(flat[i]!)) out.set(flat[i]!, flat[i + 1]!);
  return out;
}
