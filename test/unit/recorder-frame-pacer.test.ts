import { describe, expect, it } from 'vitest';
import { createFramePacer } from '../../src/recorder/frame-pacer.js';

const START = 1_000_000;

describe('frame pacer', () => {
  it('writes a frame once and lets it last through a still period, keeping wall time', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    expect(pacer.push('a', START + 50)).toEqual([]);
    // Next frame 3 s later: "a" shows in slots 0..29, written once at slot 0.
    expect(pacer.push('b', START + 3050)).toEqual([{ frame: 'a', slot: 0 }]);
    // The end: "b" from slot 30, and once more in the last slot so the video lasts 5 s.
    expect(pacer.finish(START + 5000)).toEqual([
      { frame: 'b', slot: 30 },
      { frame: 'b', slot: 49 },
    ]);
    expect(pacer.stats).toMatchObject({ slotsClosed: 50, framesWritten: 3, framesIn: 2, framesDropped: 0 });
  });

  it('keeps only the last of several frames in one slot', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    pacer.push('a', START + 10);
    pacer.push('b', START + 40);
    pacer.push('c', START + 90);
    expect(pacer.push('d', START + 120)).toEqual([{ frame: 'c', slot: 0 }]);
    expect(pacer.stats.framesDropped).toBe(2);
  });

  it('shows the first frame from the start, even when it came late', () => {
    const pacer = createFramePacer<string>({ fps: 4, startedAtMs: START });
    pacer.push('a', START + 1100);
    expect(pacer.finish(START + 2000)).toEqual([
      { frame: 'a', slot: 0 },
      { frame: 'a', slot: 7 },
    ]);
  });

  it('closes still periods while the run goes and places a late frame after them', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    pacer.push('a', START);
    expect(pacer.advance(START + 1050)).toEqual([{ frame: 'a', slot: 0 }]);
    // Nothing changed since: nothing to write.
    expect(pacer.advance(START + 2050)).toEqual([]);
    // Painted in slot 9, which is already closed: it shows from slot 20 on, nothing is lost.
    expect(pacer.push('b', START + 950)).toEqual([]);
    expect(pacer.stats.framesDropped).toBe(0);
    expect(pacer.finish(START + 2500)).toEqual([
      { frame: 'b', slot: 20 },
      { frame: 'b', slot: 24 },
    ]);
  });

  it('writes the picture again in the slots it is asked to keep (a click marker window)', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    pacer.push('a', START);
    pacer.keep(12);
    pacer.keep(19);
    pacer.keep(12);
    expect(pacer.advance(START + 1500)).toEqual([
      { frame: 'a', slot: 0 },
      { frame: 'a', slot: 12 },
    ]);
    // A new picture in slot 17: it shows until the window ends, where it is written again.
    expect(pacer.push('b', START + 1720)).toEqual([]);
    expect(pacer.push('c', START + 2500)).toEqual([
      { frame: 'b', slot: 17 },
      { frame: 'b', slot: 19 },
    ]);
    // A slot already closed cannot be kept any more.
    pacer.keep(3);
    expect(pacer.finish(START + 2600)).toEqual([{ frame: 'c', slot: 25 }]);
    expect(pacer.stats.framesWritten).toBe(5);
  });

  it('writes a last frame that never got a slot, and finishes once', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    pacer.push('a', START);
    expect(pacer.push('b', START + 520)).toEqual([{ frame: 'a', slot: 0 }]);
    expect(pacer.finish(START + 530)).toEqual([{ frame: 'b', slot: 5 }]);
    expect(pacer.finish(START + 9000)).toEqual([]);
    expect(pacer.push('c', START + 9000)).toEqual([]);
    expect(pacer.stats.slotsClosed).toBe(6);
  });

  it('has nothing to write when no frame came', () => {
    const pacer = createFramePacer<string>({ fps: 10, startedAtMs: START });
    expect(pacer.advance(START + 5000)).toEqual([]);
    expect(pacer.finish(START + 5000)).toEqual([]);
    expect(pacer.hasFrame).toBe(false);
  });

  it('rejects a non-positive frame rate', () => {
    expect(() => createFramePacer({ fps: 0, startedAtMs: START })).toThrow(RangeError);
  });
});
