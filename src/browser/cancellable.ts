/**
 * How a browser call stops when its run's signal fires (docs/action-spaces.md#cancellation).
 * Playwright's and CDP's calls take no signal; each call site therefore runs its call through
 * `cancellable` (src/domain/cancel.ts) and names what stops the browser's work for it: terminate
 * the page's script, stop the load, release what it pressed.
 */
import type { CDPSession } from 'playwright-core';

/**
 * Stops the script running in the page's renderer (the page's own, or the worker's evaluation
 * waiting behind it), so that its main thread is free again. With nothing running, Chromium ends
 * the next script instead: only used when the run stops, just before its session closes.
 */
export function terminateScripts(cdp: () => Promise<CDPSession>): () => void {
  // A session already gone has no script left to end: nothing is lost when the call fails.
  return () => void cdp().then((client) => client.send('Runtime.terminateExecution')).catch(() => undefined);
}
