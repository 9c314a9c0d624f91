import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setImmediate } from 'node:timers/promises';
import { childPidRunning, processCpuTicks, watchFinish } from '../../src/recorder/ffmpeg-process.js';

/**
 * How long an encoder may take to finish: a slow one (using CPU on a loaded machine) is waited
 * for up to the cap, a stuck one (no CPU) is signalled after the idle limit.
 */

const LIMITS = { idleMs: 1_000, maxMs: 5_000, killGraceMs: 300 };

function encoder(ticks: () => number | undefined) {
  const signals: Array<{ signal: NodeJS.Signals; atMs: number }> = [];
  const startedMs = Date.now();
  const events: string[] = [];
  return {
    signals,
    events,
    target: { cpuTicks: ticks, kill: (signal: NodeJS.Signals) => void signals.push({ signal, atMs: Date.now() - startedMs }) },
    report: (event: string) => void events.push(event),
  };
}

describe('watchFinish', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('signals an encoder that uses no CPU after the idle limit: SIGTERM, then SIGKILL after the grace', () => {
    const e = encoder(() => 42);
    watchFinish(e.target, LIMITS, e.report);
    vi.advanceTimersByTime(999);
    expect(e.signals).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(e.signals).toEqual([{ signal: 'SIGTERM', atMs: 1_000 }]);
    vi.advanceTimersByTime(300);
    expect(e.signals).toEqual([
      { signal: 'SIGTERM', atMs: 1_000 },
      { signal: 'SIGKILL', atMs: 1_300 },
    ]);
    expect(e.events).toEqual(['term', 'kill']);
  });

  it('waits for an encoder that keeps using CPU, up to the cap', () => {
    let ticks = 0;
    const e = encoder(() => (ticks += 5));
    watchFinish(e.target, LIMITS, e.report);
    vi.advanceTimersByTime(4_999);
    expect(e.signals).toEqual([]);
    expect(e.events).toEqual(['waiting', 'waiting', 'waiting', 'waiting']);
    vi.advanceTimersByTime(1);
    expect(e.signals).toEqual([{ signal: 'SIGTERM', atMs: 5_000 }]);
  });

  it('signals one that worked, then stopped making progress, at the next check', () => {
    let ticks = 0;
    const e = encoder(() => (ticks < 20 ? (ticks += 10) : ticks));
    watchFinish(e.target, LIMITS, e.report);
    vi.advanceTimersByTime(2_000);
    expect(e.signals).toEqual([{ signal: 'SIGTERM', atMs: 2_000 }]);
    expect(e.events).toEqual(['waiting', 'term']);
  });

  it('where CPU time cannot be read, the idle limit is the deadline; stopping the watch sends nothing', () => {
    const unreadable = encoder(() => undefined);
    watchFinish(unreadable.target, LIMITS, unreadable.report);
    vi.advanceTimersByTime(1_000);
    expect(unreadable.signals).toEqual([{ signal: 'SIGTERM', atMs: 1_000 }]);
    const finished = encoder(() => 1);
    const unwatch = watchFinish(finished.target, LIMITS, finished.report);
    vi.advanceTimersByTime(500);
    unwatch();
    vi.advanceTimersByTime(10_000);
    expect(finished.signals).toEqual([]);
  });
});

describe('processCpuTicks', () => {
  it('reads a process CPU time, which grows as it works, and nothing for a process that is gone', () => {
    const before = processCpuTicks(process.pid);
    expect(before).toEqual(expect.any(Number));
    let spin = 0;
    while (processCpuTicks(process.pid) === before) spin += Math.sqrt(spin + 1);
    expect(processCpuTicks(process.pid)!).toBeGreaterThan(before!);
    expect(processCpuTicks(2 ** 22 + 1)).toBeUndefined();
  });
});

describe('childPidRunning', () => {
  it("finds this process's child by an argument of its command line, and nothing once it is gone", async () => {
    const marker = `/tmp/encoder-marker-${process.pid}-${Date.now()}.mp4`;
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', marker], { stdio: 'ignore' });
    try {
      await once(child, 'spawn');
      // The command line is the new program's once it has been exec'd: wait for that, not a time.
      let pid: number | undefined;
      while ((pid = childPidRunning(marker)) === undefined) await setImmediate();
      expect(pid).toBe(child.pid);
      expect(childPidRunning(`${marker}.other`)).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    expect(childPidRunning(marker)).toBeUndefined();
  });
});
