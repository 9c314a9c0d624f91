import { describe, expect, it } from 'vitest';
import { createFramePacer } from '../../src/recorder/frame-pacer.js';

const START = 1_000_000;

describe('frame pacer', () => {
  it('repeats the held frame across a still period so the timeline keeps wall time', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    expect(pacer.push('a', START + 50)).toBeNull();
    // Next frame 3 s later: slots 0..29 show "a".
    expect(pacer.push('b', START + 3050)).toEqual({ frame: 'a', count: 30 });
    expect(pacer.finish(START + 5000)).toEqual({ frame: 'b', count: 20 });
    expect(pacer.stats).toMatchObject({ slotsWritten: 50, framesIn: 2, framesDropped: 0 });
  });

  it('keeps only the last of several frames in one slot', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    pacer.push('a', START + 10);
    pacer.push('b', START + 40);
    pacer.push('c', START + 90);
    expect(pacer.push('d', START + 120)).toEqual({ frame: 'c', count: 1 });
    expect(pacer.stats.framesDropped).toBe(2);
  });

  it('shows the first frame from the start, even when it came late', () => {
    const pacer = createFramePacer<string>({ fps: 4, startedAtMs: START });
    pacer.push('a', START + 1100);
    expect(pacer.finish(START + 2000)).toEqual({ frame: 'a', count: 8 });
  });

  it('writes still periods while the run goes and places a late frame after them', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    pacer.push('a', START);
    expect(pacer.advance(START + 1050)).toEqual({ frame: 'a', count: 10 });
    expect(pacer.advance(START + 1060)).toBeNull();
    // Painted in slot 9, which is already written: it shows from slot 10 on, nothing is lost.
    expect(pacer.push('b', START + 950)).toBeNull();
    expect(pacer.stats.framesDropped).toBe(0);
    expect(pacer.finish(START + 1500)).toEqual({ frame: 'b', count: 5 });
  });

  it('writes a last frame that never got a slot, and finishes once', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    pacer.push('a', START);
    pacer.push('b', START + 520); // writes a × 5
    expect(pacer.finish(START + 530)).toEqual({ frame: 'b', count: 1 });
    expect(pacer.finish(START + 9000)).toBeNull();
    expect(pacer.push('c', START + 9000)).toBeNull();
    expect(pacer.stats.slotsWritten).toBe(6);
  });

  it('has nothing to write when no frame came', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    expect(pacer.advance(START + 5000)).toBeNull();
    expect(pacer.finish(START + 5000)).toBeNull();
    expect(pacer.hasFrame).toBe(false);
  });

  it('rejects a non-positive frame rate', () => {
    expect(() => createFramePacer({ fps: 0, startedAtMs: START })).toThrow(RangeError);
  });
});
