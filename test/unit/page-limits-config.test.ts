import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/env.js';
import { loadConfig } from '../../src/config/schema.js';

/** The message of the ConfigError `env` raises; fails when it is accepted. */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`${JSON.stringify(env)} was accepted`);
}

const LIMITS = {
  BROWSER_TABS_MAX: [1, 100],
  CONSOLE_LINE_MAX_CHARS: [100, 1_000_000],
  CONSOLE_ENTRIES_MAX: [10, 100_000],
  CONSOLE_BYTES_MAX: [1_024, 1024 ** 3],
  VIDEO_MAX_BYTES: [1_024, 100 * 1024 ** 3],
} as const;

describe('the limits on what a page makes (docs/security.md#limits)', () => {
  it('keep the old constants as defaults, and add the budgets', () => {
    expect(loadConfig({})).toMatchObject({
      BROWSER_TABS_MAX: 10,
      CONSOLE_LINE_MAX_CHARS: 2_000,
      CONSOLE_ENTRIES_MAX: 300,
      CONSOLE_BYTES_MAX: 1_048_576,
      VIDEO_MAX_BITRATE: 2_000_000,
      VIDEO_MAX_BYTES: 314_572_800,
    });
  });

  it('take any whole number in their range', () => {
    for (const [name, [min, max]] of Object.entries(LIMITS)) {
      fc.assert(fc.property(fc.integer({ min, max }), (n) => {
        expect(loadConfig({ [name]: ` ${n} ` })[name as keyof typeof LIMITS]).toBe(n);
      }), { numRuns: 50 });
    }
  });

  it('refuse anything else with one line naming the variable, its value and the range', () => {
    for (const [name, [min, max]] of Object.entries(LIMITS)) {
      const bad = fc.oneof(
        fc.integer({ min: 0, max: min - 1 }).map(String),
        fc.integer({ min: max + 1, max: Number.MAX_SAFE_INTEGER }).map(String),
        fc.string({ minLength: 1, unit: fc.constantFrom(...'0123456789 abcxyzkM.,-_+%') }).filter((s) => s.trim() !== '' && !/^\s*\d+\s*$/.test(s)),
      );
      fc.assert(
        fc.property(bad, (value) => {
          const message = refusal({ [name]: value });
          const lines = message.split('\n');
          // The header, then exactly one line for the one bad variable.
          expect(lines).toHaveLength(2);
          expect(lines[1]).toContain(`${name}=${JSON.stringify(value)}: must be`);
          expect(lines[1]).toMatch(new RegExp(`at least ${min}|at most ${max}|whole number from ${min} to ${max}`));
        }),
        { numRuns: 60 },
      );
    }
  });

  it('read VIDEO_MAX_BITRATE as ffmpeg writes a rate', () => {
    expect(loadConfig({ VIDEO_MAX_BITRATE: '2M' }).VIDEO_MAX_BITRATE).toBe(2_000_000);
    expect(loadConfig({ VIDEO_MAX_BITRATE: '500k' }).VIDEO_MAX_BITRATE).toBe(500_000);
    expect(loadConfig({ VIDEO_MAX_BITRATE: '1.5m' }).VIDEO_MAX_BITRATE).toBe(1_500_000);
    expect(loadConfig({ VIDEO_MAX_BITRATE: '3000000' }).VIDEO_MAX_BITRATE).toBe(3_000_000);
    for (const [value, expected] of [
      ['2 Mbit/s', /must be bits a second, such as 2M/],
      ['-2M', /must be bits a second/],
      ['2G', /must be bits a second/],
      ['50k', /must be at least 100k/],
      ['101M', /must be at most 100M/],
    ] as const) {
      const lines = refusal({ VIDEO_MAX_BITRATE: value }).split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatch(new RegExp(`VIDEO_MAX_BITRATE=${JSON.stringify(value).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `));
      expect(lines[1]).toMatch(expected);
    }
  });
});
