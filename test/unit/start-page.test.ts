import { describe, expect, it } from 'vitest';
import { openStartPage } from '../../src/agent/start-page.js';
import type { NavigationResult } from '../../src/browser/types.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { heardEvents } from '../support/heard-events.js';

/** The one opener of the start page, used by the model's run (agent/loop.ts) and the replay (run-cache/cached-run.ts). */
function setup(navigate: (url: string, signal: AbortSignal) => Promise<NavigationResult>) {
  const { events: sink, lines: events } = heardEvents();
  return { events, open: (url: string, signal = new AbortController().signal) => openStartPage({ navigate }, url, sink, signal) };
}

describe('openStartPage', () => {
  it('opens the URL with the run signal and logs the navigation as the worker’s', async () => {
    const seen: Array<{ url: string; signal: AbortSignal }> = [];
    const t = setup(async (url, signal) => {
      seen.push({ url, signal });
      return { ok: true, url };
    });
    const controller = new AbortController();
    await t.open('https://shop.test/', controller.signal);
    expect(seen).toEqual([{ url: 'https://shop.test/', signal: controller.signal }]);
    expect(t.events).toEqual([{ type: 'navigation', fields: { url: 'https://shop.test/', ok: true, reason: undefined, by: 'worker' } }]);
  });

  it('ends the run with browser_error when the page cannot be opened, after logging why', async () => {
    const t = setup(async (url) => ({ ok: false, url, error: 'net::ERR_NAME_NOT_RESOLVED' }));
    const failed = await t.open('https://nowhere.test/').catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ExecutionError);
    expect(failed).toMatchObject({ code: 'browser_error', message: 'could not open the start page https://nowhere.test/: net::ERR_NAME_NOT_RESOLVED' });
    expect(t.events).toEqual([{ type: 'navigation', fields: { url: 'https://nowhere.test/', ok: false, reason: 'net::ERR_NAME_NOT_RESOLVED', by: 'worker' } }]);
  });

  it('turns a browser that throws into browser_error, and logs no navigation', async () => {
    const t = setup(async () => {
      throw new Error('Target page, context or browser has been closed');
    });
    await expect(t.open('https://shop.test/')).rejects.toMatchObject({ code: 'browser_error', message: 'browser: Target page, context or browser has been closed' });
    expect(t.events).toEqual([]);
  });

  it('cancels a navigation that hangs when the run is aborted, and ends with the abort’s reason', async () => {
    const controller = new AbortController();
    let started!: () => void;
    const navigating = new Promise<void>((resolve) => (started = resolve));
    let cancelled = false;
    // A port stops its work when the signal fires (docs/action-spaces.md#cancellation).
    const t = setup((_url, signal) => {
      started();
      return new Promise<NavigationResult>((_resolve, reject) =>
        signal.addEventListener('abort', () => {
          cancelled = true;
          reject(new Error('navigation stopped'));
        }),
      );
    });
    const opening = t.open('https://slow.test/', controller.signal);
    await navigating;
    controller.abort(new ExecutionError('timeout', 'the execution ran out of time'));
    await expect(opening).rejects.toMatchObject({ code: 'timeout', message: 'the execution ran out of time' });
    expect(cancelled).toBe(true);
    expect(t.events).toEqual([]);
});
});
