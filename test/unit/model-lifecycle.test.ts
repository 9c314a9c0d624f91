import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { END_OF_LIFE, modelLifecycle } from '../../src/model/lifecycle.js';

const sdkDir = path.join(path.dirname(createRequire(import.meta.url).resolve('@anthropic-ai/sdk')).replace(/(@anthropic-ai\/sdk).*$/, '$1'));
const sdkVersion = (JSON.parse(readFileSync(path.join(sdkDir, 'package.json'), 'utf8')) as { version: string }).version;
/** The SDK's own list of deprecated models and their end of life ("January 22nd, 2027"). */
const sdkDeprecated = Object.fromEntries(
  [...readFileSync(path.join(sdkDir, 'internal/data/deprecated-models.js'), 'utf8').matchAll(/'([a-z0-9-]+)':\s*'([^']+)'/g)].map((m) => [m[1]!, m[2]!]),
);
/** The model ids the SDK's Messages API types name. */
const sdkModels = new Set([...(/export type Model = ([^;]+);/.exec(readFileSync(path.join(sdkDir, 'resources/messages/messages.d.ts'), 'utf8'))?.[1] ?? '').matchAll(/'([a-z0-9-]+)'/g)].map((m) => m[1]!));
const NOW = Date.parse('2026-12-01T12:00:00Z');
const isoOf = (spoken: string) => new Date(`${spoken.replace(/(\d+)(st|nd|rd|th)/, '$1')} UTC`).toISOString().slice(0, 10);

describe('model lifecycle: the table follows the SDK', () => {
  it('is read against SDK 1.15.0', () => {
    expect(sdkVersion).toBe('1.15.0');
    expect(sdkModels.size).toBeGreaterThan(10);
  });

  it('gives every model the SDK deprecates the SDK’s end of life', () => {
    expect(Object.keys(sdkDeprecated).length).toBeGreaterThan(0);
    for (const [id, spoken] of Object.entries(sdkDeprecated)) {
      const life = modelLifecycle(id, NOW);
      expect(life.status, id).not.toBe('active');
      expect(life.status === 'deprecated' ? life.endOfLife : life.status === 'retired' ? life.retiredOn : '', id).toBe(isoOf(spoken));
    }
  });

  it('has every family the SDK no longer names retired by now, and none the SDK names without a date', () => {
    for (const [family] of END_OF_LIFE) {
      if (!sdkModels.has(family)) expect(modelLifecycle(family, NOW).status, family).toBe('retired');
    }
    for (const id of sdkModels) if (!(id in sdkDeprecated)) expect(modelLifecycle(id, NOW).status, id).toBe('active');
  });

  it('retires Sonnet 4.5 (dated ids and aliases too) and keeps Opus 4.5 deprecated until 2027-01-22', () => {
    for (const id of ['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-sonnet-4-5-latest']) expect(modelLifecycle(id, NOW)).toEqual({ status: 'retired', retiredOn: '2026-11-30' });
    expect(modelLifecycle('claude-opus-4-5-20251101', NOW)).toEqual({ status: 'deprecated', endOfLife: '2027-01-22' });
    expect(modelLifecycle('claude-opus-4-5', Date.parse('2027-01-22T00:00:00Z'))).toEqual({ status: 'retired', retiredOn: '2027-01-22' });
    expect(modelLifecycle('claude-opus-4-20250514', NOW).status).toBe('retired');
    // Another minor version is another family.
    expect(modelLifecycle('claude-sonnet-4-6', NOW)).toEqual({ status: 'active' });
    expect(modelLifecycle('claude-opus-5-5', NOW)).toEqual({ status: 'active' });
  });
});

describe('model lifecycle: before the run', () => {
  it('refuses a retired model naming its retirement, and passes a deprecated one on with its end of life', async () => {
    const { actionSpaceChooser } = await import('../../src/compose.js');
    const choose = actionSpaceChooser(() => NOW);
    const retired = choose('claude-sonnet-4-5-20250929', undefined);
    expect(retired).toMatchObject({ ok: false, field: 'model' });
    expect(retired.ok ? '' : retired.reason).toMatch(/claude-sonnet-4-5-20250929 was retired on 2026-11-30/);
    expect(choose('claude-opus-4-5', undefined)).toMatchObject({ ok: true, endOfLife: '2027-01-22' });
    const current = choose('claude-opus-5-5', undefined);
    expect(current.ok && current.endOfLife).toBe(undefined);
  });
});
