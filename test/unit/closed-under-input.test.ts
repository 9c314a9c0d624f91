import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { closedUnderInput } from '../../src/browser/session-input.js';

/** The two things `closedUnderInput` asks of a page, with a close the test triggers. */
function fakePage(closed = false) {
  const events = new EventEmitter();
  const page = {
    closed,
    waits: 0,
    isClosed: () => page.closed,
    waitForEvent: (event: string, options: { timeout: number }) =>
      new Promise<void>((resolve, reject) => {
        page.waits++;
        const timer = setTimeout(() => reject(new Error(`no ${event} within ${options.timeout} ms`)), options.timeout);
        events.once(event, () => {
          clearTimeout(timer);
          resolve();
        });
      }),
    close() {
      page.closed = true;
      events.emit('close');
    },
  };
  return page;
}

const targetClosed = Object.assign(new Error('mouse.click: Target page, context or browser has been closed'), { name: 'TargetClosedError' });

describe('closedUnderInput: a popup closing under the input is not a failure', () => {
  it('is true when the page is already closed, whatever the error', async () => {
    expect(await closedUnderInput(fakePage(true) as never, new Error('anything'))).toBe(true);
  });

  it('waits for the close event when the error comes first', async () => {
    const page = fakePage();
    const verdict = closedUnderInput(page as never, targetClosed);
    page.close();
    expect(await verdict).toBe(true);
  });

  it('is false when the page says closed but never closes', async () => {
    expect(await closedUnderInput(fakePage() as never, targetClosed, 50)).toBe(false);
  });

  it('is false for any other error on an open page, at once', async () => {
    const page = fakePage();
    expect(await closedUnderInput(page as never, new Error('mouse.click: Timeout 30000ms exceeded'))).toBe(false);
    expect(page.waits).toBe(0);
  });

  it('knows the target-closed error by its message too (CDP sessions reject with a plain Error)', async () => {
    const page = fakePage();
    const verdict = closedUnderInput(page as never, new Error('Protocol error (Input.dispatchKeyEvent): Target closed'));
    page.close();
    expect(await verdict).toBe(true);
  });
});
