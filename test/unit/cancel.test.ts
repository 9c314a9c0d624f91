import { describe, expect, it } from 'vitest';
import { cancellable, settledOrAborted } from '../../src/domain/cancel.js';

/** A browser call the test ends by hand. */
function pending<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('cancellable: how an operation stops with its run', () => {
  it('answers like the call while the signal stays quiet, and cancels nothing', async () => {
    let cancels = 0;
    await expect(cancellable(new AbortController().signal, async () => 'read', () => cancels++)).resolves.toBe('read');
    await expect(cancellable(new AbortController().signal, () => Promise.reject(new Error('page gone')), () => cancels++)).rejects.toThrow('page gone');
    expect(cancels).toBe(0);
  });

  it('on abort runs the cancel once and rejects with the signal’s reason at once; the call’s later failure is dropped', async () => {
    const controller = new AbortController();
    const call = pending<string>();
    let cancels = 0;
    const result = cancellable(controller.signal, () => call.promise, () => cancels++);
    const reason = new Error('deadline');
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    expect(cancels).toBe(1);
    // The cancelled call fails afterwards (Chromium: "Execution was terminated"): nobody's error.
    call.reject(new Error('Execution was terminated'));
    await Promise.resolve();
  });

  it('does not start a call once the run has stopped', async () => {
    const controller = new AbortController();
    controller.abort(new Error('shutdown'));
    let started = false;
    await expect(
      cancellable(controller.signal, async () => {
        started = true;
      }),
    ).rejects.toThrow('shutdown');
    expect(started).toBe(false);
  });

  it('stops listening to the signal once the call has answered', async () => {
    const controller = new AbortController();
    let cancels = 0;
    await cancellable(controller.signal, async () => 1, () => cancels++);
    controller.abort();
    expect(cancels).toBe(0);
  });

  it('settledOrAborted: a wait that cannot be stopped ends with undefined on abort, and its late failure is dropped', async () => {
    const controller = new AbortController();
    const wait = pending<string>();
    const result = settledOrAborted(controller.signal, wait.promise);
    controller.abort();
    await expect(result).resolves.toBeUndefined();
    wait.reject(new Error('timeout 2000 ms'));
    // Aborted before the wait began: the same, without an unhandled rejection either.
    const late = pending<string>();
    await expect(settledOrAborted(controller.signal, late.promise)).resolves.toBeUndefined();
    late.reject(new Error('no answer'));
    await Promise.resolve();
  });
});
