import { EventEmitter, once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from '../telemetry/types.js';

/**
 * One reader for every answers stream a worker process waits on
 * (docs/human-in-the-loop.md#the-answers-stream): a single connection issues one blocking
 * `XREAD` over all the followed streams, each from its own cursor, and hands each stream's new
 * entries to whoever follows it. A waiting run holds no connection of its own, so the number of
 * connections a worker opens to Redis does not grow with the runs that wait.
 *
 * The set of streams changes when a run starts or stops waiting. The read is re-issued with the
 * new set when the current one returns, which it does after at most `blockMs` (default 1 s), or
 * at once when an entry arrives on a followed stream. Joining late loses nothing: a new follower
 * reads from its own cursor (where the stream stood before the question was announced), so an
 * answer written before its stream is in the read is read by the next one. `CLIENT UNBLOCK` from
 * the command connection would re-issue sooner, but it cannot be made reliable alone (the new
 * read races with an `XREAD` still on its way to the server, which the unblock then misses, and
 * the reader's client id changes on every reconnection) and managed Redis often denies `CLIENT`
 * commands; a person takes longer than a second to read a question, so the bound is the simpler
 * guarantee.
 *
 * Entries of a stream nobody follows any more (its run got its answer, timed out or ended) are
 * left in Redis untouched: the run's next question, or its end, accounts for them.
 */

export type StreamEntry = [id: string, fields: string[]];

export interface StreamFollower {
  /**
   * Hands each entry of `key` after `cursor` to `deliver`, in order, until the returned function
   * is called. `fail` hears an error that stops this stream from being read (the key is not a
   * stream). One follower per key at a time.
   */
  follow(key: string, cursor: string, deliver: (entries: StreamEntry[]) => void, fail: (error: Error) => void): () => void;
  close(): Promise<void>;
}

interface Follow {
  cursor: string;
  deliver(entries: StreamEntry[]): void;
  fail(error: Error): void;
}

/** Entries read per stream per `XREAD`; more wait for the next read, which follows at once. */
const READ_COUNT = 100;
/** The in-process event that wakes the idle reader (not an execution event). */
const FOLLOWED = 'followed';
/** Pause before reading again after Redis failed a read. */
const RETRY_AFTER_ERROR_MS = 1_000;

export function createStreamFollower(options: { reader: Redis; logger: Logger; blockMs?: number }): StreamFollower {
  const { reader, logger } = options;
  const blockMs = options.blockMs ?? 1_000;
  const follows = new Map<string, Follow>();
  // Wakes the idle loop when a stream is followed (no read is issued while none is); close wakes it by `stopping`.
  const changes = new EventEmitter();
  const stopping = new AbortController();
  let loop: Promise<void> | undefined;
  let closing: Promise<void> | undefined;

  const readOnce = async (): Promise<void> => {
    const keys = [...follows.keys()];
    const cursors = keys.map((key) => follows.get(key)!.cursor);
    let reply: Array<[string, StreamEntry[]]> | null;
    try {
      reply = (await reader.xread('COUNT', READ_COUNT, 'BLOCK', blockMs, 'STREAMS', ...keys, ...cursors)) as typeof reply;
    } catch (error) {
      if (stopping.signal.aborted) return;
      logger.warn({ err: String(error), streams: keys.length }, 'answers streams: read failed; reading again');
      if (/WRONGTYPE/.test(String(error))) await dropWrongTypes(keys);
      // Cut short (an AbortError, its only failure) when the follower stops: the loop ends then.
      await delay(RETRY_AFTER_ERROR_MS, undefined, { signal: stopping.signal }).catch(() => undefined);
      return;
    }
    for (const [key, entries] of reply ?? []) {
      const follow = follows.get(key);
      // Followed again since the read was issued (a new question): only entries after its own cursor are its.
      const fresh = follow ? entries.filter(([id]) => compareStreamIds(id, follow.cursor) > 0) : [];
      if (!follow || fresh.length === 0) continue;
      follow.cursor = fresh.at(-1)![0];
      follow.deliver(fresh);
    }
  };

  /** A key that is not a stream fails the whole read: its follower is told, the others read on. */
  const dropWrongTypes = async (keys: string[]): Promise<void> => {
    for (const key of keys) {
      const type = await reader.type(key).catch(() => 'unknown');
      if (type === 'stream' || type === 'none' || type === 'unknown') continue;
      const follow = follows.get(key);
      follows.delete(key);
      follow?.fail(new Error(`the answers stream ${key} is a ${type}, not a stream`));
    }
  };

  const run = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      if (follows.size === 0) {
        // Cut short (an AbortError, its only failure) when the follower stops: the loop ends then.
        await once(changes, FOLLOWED, { signal: stopping.signal }).catch(() => undefined);
        continue;
      }
      try {
        await readOnce();
      } catch (error) {
        // A fault of ours, not of Redis: said, and the read goes on rather than leaving every run deaf.
        logger.error({ err: String(error) }, 'answers streams: reading failed');
        // Cut short (an AbortError, its only failure) when the follower stops: the loop ends then.
        await delay(RETRY_AFTER_ERROR_MS, undefined, { signal: stopping.signal }).catch(() => undefined);
      }
    }
  };

  return {
    follow(key, cursor, deliver, fail) {
      if (follows.has(key)) throw new Error(`the answers stream ${key} is followed already`);
      if (stopping.signal.aborted) throw new Error('the answers reader is closed');
      const follow: Follow = { cursor, deliver, fail };
      follows.set(key, follow);
      loop ??= run();
      changes.emit(FOLLOWED);
      return () => {
        if (follows.get(key) === follow) follows.delete(key);
      };
    },
    close() {
      closing ??= (async () => {
        stopping.abort();
        // Ends a read blocked in Redis at once; the loop sees it is stopping.
        reader.disconnect();
        await loop;
      })();
      return closing;
    },
  };
}

/** Orders two stream entry ids (`<ms>-<seq>`); ids too big for a double are compared as BigInts. */
export function compareStreamIds(a: string, b: string): number {
  const [aMs = '0', aSeq = '0'] = a.split('-');
  const [bMs = '0', bSeq = '0'] = b.split('-');
  const ms = BigInt(aMs) - BigInt(bMs);
  if (ms !== 0n) return ms < 0n ? -1 : 1;
  const seq = BigInt(aSeq) - BigInt(bSeq);
  return seq === 0n ? 0 : seq < 0n ? -1 : 1;
}
