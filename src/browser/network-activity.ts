/**
 * The requests of one browser context as settle() needs them: which are under way and since
 * when, and when the network last moved. `quiet()` waits for the requests an action caused,
 * never for those already open before it (a long poll, a stream the page keeps open).
 */
import type { BrowserContext, Page, Request } from 'playwright-core';

/** After a request that started or ended since the action, the network must be idle this long. */
const QUIET_MS = 60;
/** Long-lived requests that never "finish": they must not hold settle() to its cap. */
const STREAMING_TYPES = new Set(['eventsource', 'websocket']);
/**
 * Requests a page's script made: done for the network wait once their answer's headers are in.
 * Their body is the page's business (a stream may never end; one the page reads is waited for
 * by the settle probe, which knows when the read resolves).
 */
const SCRIPT_TYPES = new Set(['fetch', 'xhr']);

export interface NetworkActivity {
  /**
   * Resolves once no request started at or after `sinceMs` is in flight and, when one started
   * or ended after `sinceMs`, QUIET_MS passed since the last one; or at the deadline, with the
   * URLs still awaited then (none when the network went quiet, or on abort).
   */
  quiet(sinceMs: number, deadline: number, signal: AbortSignal): Promise<string[]>;
  /** A page closed: its requests will never finish. */
  forget(page: Page): void;
}

export function trackNetwork(context: BrowserContext): NetworkActivity {
  /** Requests under way, with when each started. */
  const inflight = new Map<Request, number>();
  const listeners = new Set<() => void>();
  /** When the network last started or finished a request. */
  let lastNetworkAt = 0;
  const moved = () => {
    lastNetworkAt = Date.now();
    for (const listener of [...listeners]) listener();
  };
  const settled = (request: Request) => {
    if (inflight.delete(request)) moved();
  };
  context.on('request', (request) => {
    if (STREAMING_TYPES.has(request.resourceType())) return;
    inflight.set(request, Date.now());
    moved();
  });
  context.on('response', (response) => {
    const request = response.request();
    if (SCRIPT_TYPES.has(request.resourceType())) settled(request);
  });
  context.on('requestfinished', settled);
  context.on('requestfailed', settled);

  return {
    quiet: (sinceMs, deadline, signal) =>
      new Promise<string[]>((resolve) => {
        let timer: NodeJS.Timeout | undefined;
        const waiting = () => [...inflight.values()].some((startedAt) => startedAt >= sinceMs);
        const awaited = () => [...inflight].filter(([, startedAt]) => startedAt >= sinceMs).map(([request]) => request.url());
        const finish = (pending: string[] = []) => {
          clearTimeout(timer);
          listeners.delete(check);
          signal.removeEventListener('abort', onAbort);
          resolve(pending);
        };
        const onAbort = () => finish();
        function check() {
          clearTimeout(timer);
          const left = deadline - Date.now();
          if (signal.aborted) return finish();
          if (left <= 0) return finish(awaited());
          if (waiting()) {
            timer = setTimeout(check, left);
            return;
          }
          // No request since the input: nothing to wait for. Requests the input caused are seen
          // by the page check first (fetch, XHR, a form or link navigation), which runs before
          // this one; a request that ended lately leaves the page a moment to show its answer.
          if (lastNetworkAt < sinceMs) return finish();
          const idleFor = Date.now() - lastNetworkAt;
          if (idleFor >= QUIET_MS) return finish();
          timer = setTimeout(check, Math.min(QUIET_MS - idleFor, left));
        }
        listeners.add(check);
        signal.addEventListener('abort', onAbort, { once: true });
        check();
      }),
    forget(page) {
      for (const request of inflight.keys()) if (frameOwner(request) === page) inflight.delete(request);
    },
  };
}

function frameOwner(request: Request): Page | undefined {
  try {
    return request.frame().page();
  } catch {
    // Service-worker requests have no frame.
    return undefined;
  }
}
