import { describe, expect, it } from 'vitest';
import { waitUntil } from '../../src/browser/wait-until.js';

describe('waitUntil', () => {
  it('resolves true at once when the condition holds, and when a waker finds it holding', async () => {
    const wakers = new Set<() => void>();
    expect(await waitUntil(() => true, wakers, 10_000)).toBe(true);
    let ready = false;
    const waiting = waitUntil(() => ready, wakers, 10_000);
    expect(wakers.size).toBe(1);
    for (const wake of [...wakers]) wake();
    ready = true;
    for (const wake of [...wakers]) wake();
    expect(await waiting).toBe(true);
    expect(wakers.size).toBe(0);
  });

  it('resolves false when its time is up or its signal aborts, and leaves the wakers as it found them', async () => {
    const wakers = new Set<() => void>();
    expect(await waitUntil(() => false, wakers, 0)).toBe(false);
    const stop = new AbortController();
    const waiting = waitUntil(() => false, wakers, 10_000, stop.signal);
    stop.abort();
    expect(await waiting).toBe(false);
    expect(wakers.size).toBe(0);
    expect(await waitUntil(() => false, wakers, 10_000, stop.signal)).toBe(false);
  });
});
