/**
 * Name lookups of webhook targets, bounded (docs/api.md#webhooks). The system resolver runs on
 * libuv's thread pool (4 threads by default, shared with file reads) and has no time limit of its
 * own, so a resolver that stalls would hold a thread per lookup and an attempt for as long as it
 * likes. Here at most `maxConcurrent` lookups run at once — a slot is given back when the lookup
 * itself ends, not when its caller stops waiting, since the thread is held until then — and each
 * caller waits (for a slot, then for the answer) only until its signal: the attempt's 10 s count
 * the lookup, whatever the resolver does.
 */

/** The lookup did not end before the caller's time limit. */
export class LookupTimedOut extends Error {
  constructor() {
    super('the lookup timed out');
  }
}

export type Lookup = (host: string) => Promise<string[]>;

export function createLookupGate(maxConcurrent: number) {
  let running = 0;
  const waiting: (() => void)[] = [];

  const release = (): void => {
    running -= 1;
    waiting.shift()?.();
  };

  /** Resolves once a slot is taken, or rejects at `signal`. */
  function acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(new LookupTimedOut());
    if (running < maxConcurrent) {
      running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const take = (): void => {
        signal.removeEventListener('abort', give);
        running += 1;
        resolve();
      };
      const give = (): void => {
        const at = waiting.indexOf(take);
        if (at >= 0) waiting.splice(at, 1);
        reject(new LookupTimedOut());
      };
      waiting.push(take);
      signal.addEventListener('abort', give, { once: true });
    });
  }

  return {
    /** `lookup(host)` in a slot, its answer or its error, or LookupTimedOut at `signal`. */
    async run(lookup: Lookup, host: string, signal: AbortSignal): Promise<string[]> {
      await acquire(signal);
      const pending = lookup(host);
      // The slot is the thread's: it is free when the lookup ends, however long that is.
      pending.then(release, release);
      return new Promise<string[]>((resolve, reject) => {
        const stop = (): void => reject(new LookupTimedOut());
        if (signal.aborted) return stop();
        signal.addEventListener('abort', stop, { once: true });
        pending.then(
          (addresses) => {
            signal.removeEventListener('abort', stop);
            resolve(addresses);
          },
          (error: unknown) => {
            signal.removeEventListener('abort', stop);
            reject(error instanceof Error ? error : new Error(String(error)));
          },
        );
      });
    },
    /** Lookups holding a slot now (tests). */
    get running(): number {
      return running;
    },
  };
}

export type LookupGate = ReturnType<typeof createLookupGate>;
