import { describe, expect, it } from 'vitest';
import { buildStepsVtt, escapeCueText, formatVttTime } from '../../src/recorder/steps-vtt.js';

describe('steps.vtt', () => {
  it('has one cue per mark, relative to the start, in time order', () => {
    const vtt = buildStepsVtt(
      [
        { atMs: 5_000, label: 'type "{{password}}"' },
        { atMs: 2_500, label: 'click (412, 318)', point: { x: 412, y: 318 } },
      ],
      1_000,
    );
    expect(vtt).toBe(['WEBVTT', '', 'step-1', '00:00:01.500 --> 00:00:04.000', 'click (412, 318)', '', 'step-2', '00:00:04.000 --> 00:00:07.000', 'type "{{password}}"', ''].join('\n'));
  });

  it('escapes markup, arrows and line breaks in labels', () => {
    expect(escapeCueText('type "<b>a & b</b>" --> x\n\ny')).toBe('type "&lt;b&gt;a &amp; b&lt;/b&gt;" --&gt; x  y');
    expect(escapeCueText('  ')).toBe('(action)');
  });

  it('formats hours and clamps marks before the start', () => {
    expect(formatVttTime(3_723_004)).toBe('01:02:03.004');
    expect(buildStepsVtt([{ atMs: 0, label: 'early' }], 10)).toContain('00:00:00.000 --> 00:00:03.000');
  });

  it('is a bare header with no marks', () => {
    expect(buildStepsVtt([], 0)).toBe('WEBVTT\n');
  });
});
