/**
 * Timers of either kind, as the settle probe (settle-probe.ts) sees them: which of them an input
 * should be waited for. A timeout the input set is waited for when it is due soon (a change
 * shown 300 ms after a click, a debounced search). Repeating timers need more care: an interval
 * (or a timeout that sets itself again from its own callback: a chain) is either a poll, which
 * looks at the page on each tick and reacts to what the input changed (a list filtered by the
 * value of a search field, as Redmine's watcher search does), or a clock, whose ticks change the
 * page whatever the input did (a clock, a countdown, a ticker).
 *
 * The rules (docs/action-spaces.md#settling):
 * - A repeating timer whose last two ticks before the input each did something (changed the
 *   DOM, made a request, set a timer) is a clock: never waited for, and the DOM changes its ticks
 *   make do not count as the page changing (else a clock ticking faster than the quiet window
 *   would hold every action to the cap).
 * - One that was there before the input and is not a clock is a poll: its next tick is waited
 *   for, and the one after while each does something, up to its third tick since the input;
 *   what a tick starts (a request, a timer) is then waited for like anything the input started.
 * - One the input started (or started since): up to its first three ticks.
 * - Only ticks due within the horizon after the input are waited for, like any timer.
 */

/** One tick of a repeating timer: when it ran, and whether it did anything. */
export interface Tick {
  at: number;
  busy: boolean;
}

/** An interval, or a chain of timeouts (each set by the previous one's callback), or a single timeout. */
export interface Repeater {
  kind: 'interval' | 'timeout';
  created: number;
  delay: number;
  ticks: Tick[];
}

/** Ticks kept per repeating timer: enough to tell a clock and count the ticks since an input. */
const KEPT_TICKS = 6;
/** A poll is waited for up to this many ticks after an input. */
export const MAX_TICKS = 3;

/** What the probe tells the timers about the page: the DOM changes since last asked, and a count of the work started. */
export interface Activity {
  /** Takes the DOM changes recorded since the last call; unless `mine` (a clock's), they count as the page changing. Whether there were any. */
  takeChanges(mine: boolean): boolean;
  /** Requests made and timers set so far (a tick that raises it did something). */
  work(): number;
  /** Counts one piece of work started. */
  started(): void;
  /** When the page last received an input event from the browser (a key, a click): epoch ms. */
  inputAt(): number;
}

export interface TimerWatch {
  /** Timers (of either kind) the page set that an input at `since` should wait for: due by `since + horizon`. */
  due(since: number, horizon: number): number;
}

const before = (r: Repeater, since: number) => r.ticks.filter((t) => t.at < since);
const after = (r: Repeater, since: number) => r.ticks.filter((t) => t.at >= since);

/** Busy on each of its last two ticks before `since`: it changes the page whatever happens (a clock). */
function isClock(ticks: Tick[]): boolean {
  const last = ticks.slice(-2);
  return last.length === 2 && last.every((t) => t.busy);
}

/**
 * Whether an input at `since` waits for this repeater's tick due at `nextDue`. `seen`: from when
 * a tick sees what the input did (its events reach the page a moment after `since`: a tick in
 * between saw nothing yet, and does not count as having looked).
 */
export function awaited(r: Repeater, nextDue: number, since: number, seen: number, horizon: number): boolean {
  if (nextDue > since + horizon) return false;
  const later = after(r, seen);
  if (later.length >= MAX_TICKS) return false;
  if (r.created >= since) return true;
  const earlier = before(r, since);
  // A timeout set before the input, not part of a chain that ticked: none of the input's business.
  if (r.kind === 'timeout' && earlier.length === 0) return false;
  if (isClock(earlier)) return false;
  // A poll that looked since the input and found nothing to do.
  const last = later[later.length - 1];
  return !(last && !last.busy);
}

export function watchTimers(activity: Activity): TimerWatch {
  const nativeSetTimeout = window.setTimeout.bind(window);
  const nativeClearTimeout = window.clearTimeout.bind(window);
  const nativeSetInterval = window.setInterval.bind(window);
  const nativeClearInterval = window.clearInterval.bind(window);
  /** Timeouts waiting to run, each with the chain it belongs to. */
  const timeouts = new Map<number, { due: number; chain: Repeater }>();
  const intervals = new Map<number, Repeater>();
  /** The timer whose tick runs now; the first timeout its callback sets continues its chain. */
  let running: { repeater: Repeater; continued: boolean } | undefined;

  /** Runs one tick of `r`, and notes whether it did anything (including in the promise jobs it queued). */
  const tick = (r: Repeater, run: () => unknown): unknown => {
    const clock = isClock(r.ticks);
    // Changes from before the tick are the page's, not the tick's.
    activity.takeChanges(false);
    const workBefore = activity.work();
    const outer = running;
    running = { repeater: r, continued: false };
    try {
      return run();
    } finally {
      running = outer;
      const done: Tick = { at: Date.now(), busy: activity.takeChanges(clock) || activity.work() !== workBefore };
      r.ticks.push(done);
      if (r.ticks.length > KEPT_TICKS) r.ticks.shift();
      queueMicrotask(() => {
        if (activity.takeChanges(clock)) done.busy = true;
      });
    }
  };

  const forget = (id: number | undefined) => {
    if (id === undefined) return;
    timeouts.delete(id);
    intervals.delete(id);
  };

  window.setTimeout = function (handler: TimerHandler, delay?: number, ...args: unknown[]) {
    if (typeof handler !== 'function') return nativeSetTimeout(handler, delay, ...args);
    const now = Date.now();
    const wait = Math.max(0, Number(delay) || 0);
    // The first timeout a timeout's callback sets continues its chain; any other is work done.
    let chain: Repeater;
    if (running && running.repeater.kind === 'timeout' && !running.continued) {
      running.continued = true;
      chain = running.repeater;
      chain.delay = wait;
    } else {
      activity.started();
      chain = { kind: 'timeout', created: now, delay: wait, ticks: [] };
    }
    let id = 0;
    id = nativeSetTimeout(function (this: unknown, ...a: unknown[]) {
      timeouts.delete(id);
      return tick(chain, () => (handler as (...args: unknown[]) => unknown).apply(this, a));
    }, delay, ...args);
    timeouts.set(id, { due: now + wait, chain });
    return id;
  } as typeof window.setTimeout;

  window.setInterval = function (handler: TimerHandler, delay?: number, ...args: unknown[]) {
    if (typeof handler !== 'function') return nativeSetInterval(handler, delay, ...args);
    activity.started();
    const repeater: Repeater = { kind: 'interval', created: Date.now(), delay: Math.max(0, Number(delay) || 0), ticks: [] };
    const id = nativeSetInterval(function (this: unknown, ...a: unknown[]) {
      return tick(repeater, () => (handler as (...args: unknown[]) => unknown).apply(this, a));
    }, delay, ...args);
    intervals.set(id, repeater);
    return id;
  } as typeof window.setInterval;

  // Either clears either kind (one id space in browsers).
  window.clearTimeout = function (id?: number) {
    forget(id);
    return nativeClearTimeout(id);
  } as typeof window.clearTimeout;
  window.clearInterval = function (id?: number) {
    forget(id);
    return nativeClearInterval(id);
  } as typeof window.clearInterval;

  return {
    due(since, horizon) {
      const seen = Math.max(since, activity.inputAt());
      let n = 0;
      for (const t of timeouts.values()) if (awaited(t.chain, t.due, since, seen, horizon)) n++;
      for (const r of intervals.values()) {
        const last = r.ticks[r.ticks.length - 1];
        if (awaited(r, (last ? last.at : r.created) + r.delay, since, seen, horizon)) n++;
      }
      return n;
    },
  };
}
