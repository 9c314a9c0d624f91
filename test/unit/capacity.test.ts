import { describe, expect, it } from 'vitest';
import { createCapacity, readMemory } from '../../src/telemetry/capacity.js';

const MB = 1024 * 1024;

describe('admission by capacity', () => {
  it('admits while the tree stays under its limit with one more execution', () => {
    let reading = { treeRssBytes: 500 * MB, availableBytes: 10_000 * MB };
    const capacity = createCapacity({ maxMemoryBytes: 1_000 * MB, minFreeBytes: 0, perExecutionBytes: 200 * MB }, () => reading, 0);
    expect(capacity.freeSlots(1)).toBe(2);
    expect(capacity.hasRoom(1)).toBe(true);
    reading = { treeRssBytes: 850 * MB, availableBytes: 10_000 * MB };
    expect(capacity.hasRoom(1)).toBe(false);
    expect(capacity.freeSlots(1)).toBe(0);
    // Nothing running: one is always taken, or a heavy baseline would starve the worker.
    expect(capacity.hasRoom(0)).toBe(true);
    expect(capacity.freeSlots(0)).toBe(1);
  });

  it('keeps a floor of free memory on the machine or container', () => {
    const capacity = createCapacity({ maxMemoryBytes: 0, minFreeBytes: 1_000 * MB, perExecutionBytes: 300 * MB }, () => ({ treeRssBytes: 50 * MB, availableBytes: 1_500 * MB }), 0);
    expect(capacity.freeSlots(2)).toBe(1);
    const tight = createCapacity({ maxMemoryBytes: 0, minFreeBytes: 1_000 * MB, perExecutionBytes: 300 * MB }, () => ({ availableBytes: 1_200 * MB }), 0);
    expect(tight.hasRoom(1)).toBe(false);
  });

  it('reads this process tree and the available memory from Linux', () => {
    const { treeRssBytes, availableBytes } = readMemory(process.pid);
    expect(treeRssBytes).toBeGreaterThan(process.memoryUsage().rss / 2);
    expect(availableBytes).toBeGreaterThan(0);
  });
});
