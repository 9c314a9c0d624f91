import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cancellable, settledOrAborted } from '../../src/domain/cancel.js';

/** An operation the test ends by hand. */
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

  it('settledOrAborted runs the stop step when the signal fires during the wait, and not after the wait ended', async () => {
    const controller = new AbortController();
    const wait = pending<string>();
    let stops = 0;
    const result = settledOrAborted(controller.signal, wait.promise, () => stops++);
    controller.abort();
    await expect(result).resolves.toBeUndefined();
    expect(stops).toBe(1);
    const done = new AbortController();
    await expect(settledOrAborted(done.signal, Promise.resolve('still'), () => stops++)).resolves.toBe('still');
    done.abort();
    expect(stops).toBe(1);
  });

  it('in any order of answer, failure and abort: one outcome, the stop step only for an abort that came first, no unhandled failure', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.boolean(), fc.boolean(), async (s, succeeds, abortedBefore) => {
        const controller = new AbortController();
        const reason = new Error('stopped');
        if (abortedBefore) controller.abort(reason);
        let started = 0;
        let stops = 0;
        const work = () => {
          started++;
          return s.schedule(succeeds ? Promise.resolve('answer') : Promise.reject(new Error('failed')), 'work settles');
        };
        const outcome = cancellable(controller.signal, work, () => stops++).then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
        const abort = s.schedule(Promise.resolve(), 'abort').then(() => controller.abort(reason));
        await s.waitAll();
        await abort;
        const got = await outcome;
        if (abortedBefore) {
          expect(started).toBe(0);
          expect(got).toEqual({ error: reason });
          expect(stops).toBe(0);
          return;
        }
        expect(started).toBe(1);
        const abortCameFirst = s.report().findIndex((task) => task.label === 'abort') < s.report().findIndex((task) => task.label === 'work settles');
        if (abortCameFirst) {
          expect(got).toEqual({ error: reason });
          expect(stops).toBe(1);
        } else {
          expect(got).toEqual(succeeds ? { value: 'answer' } : { error: new Error('failed') });
          expect(stops).toBe(0);
        }
      }),
    );
  });
});
