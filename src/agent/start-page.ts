import type { BrowserSession } from '../browser/types.js';
import { ExecutionError } from '../contract/errors.js';
import type { ExecutionEventSink } from '../execution/events.js';
import { browserCall } from './browser-call.js';

/**
 * Opens the execution's start page: the one place that does, for the model's run and for a
 * replay of the run cache alike (docs/run-cache.md#replay). The navigation is logged as the
 * worker's; a page that cannot be opened ends the run with `browser_error`.
 */
export async function openStartPage(session: Pick<BrowserSession, 'navigate'>, url: string, events: ExecutionEventSink, signal: AbortSignal): Promise<void> {
  const opened = await browserCall((cancel) => session.navigate(url, cancel), signal);
  events.emit('navigation', { url, ok: opened.ok, reason: opened.error, by: 'worker' });
  if (!opened.ok) throw new ExecutionError('browser_error', `could not open the start page ${url}: ${opened.error ?? 'unknown error'}`);
}
