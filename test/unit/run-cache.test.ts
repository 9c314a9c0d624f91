import { describe, expect, it } from 'vitest';
import { cacheFingerprint, fillTemplate, inputValues, pageShape, parseCacheEntry, templateText, templateValue, RUN_CACHE_FORMAT } from '../../src/domain/run-cache.js';

describe('run cache rules', () => {
  it('keeps a page by origin, path and the names of its query parameters', () => {
    expect(pageShape('https://shop.test/orders?id=17&sort=asc')).toBe('https://shop.test/orders?id&sort');
    expect(pageShape('https://shop.test/orders?sort=desc&id=18#top')).toBe('https://shop.test/orders?id&sort');
    expect(pageShape('https://shop.test/orders')).not.toBe(pageShape('https://shop.test/order'));
  });

  it('turns input values into their paths, longest first, secrets left as their placeholders', () => {
    const values = inputValues({ user: 'ann', password: '{{password}}', customer: { name: 'ACME Ltd', city: 'Lyon' }, n: 42, flag: true, x: 'a' });
    expect(values.map((v) => v.path)).toEqual(['customer.name', 'customer.city', 'user', 'n']);
    expect(templateText('ann', values)).toBe('{{user}}');
    expect(templateText('Order for ACME Ltd in Lyon', values)).toBe('Order for {{customer.name}} in {{customer.city}}');
    // A short value is only taken whole: "ann" inside "Annual" stays.
    expect(templateText('Annual report of ann', values)).toBe('Annual report of ann');
    expect(templateValue({ value: 'ACME Ltd', nested: ['Lyon', 42] }, values)).toEqual({ value: '{{customer.name}}', nested: ['{{customer.city}}', 42] });
  });

  it('fills paths with the new input, and leaves secrets and unknown paths as placeholders', () => {
    const input = { user: 'bob', password: '{{password}}', customer: { name: 'Globex' } };
    expect(fillTemplate({ a: '{{user}}', b: 'for {{customer.name}}', c: '{{password}}', d: '{{nowhere}}' }, input, ['password'])).toEqual({ a: 'bob', b: 'for Globex', c: '{{password}}', d: '{{nowhere}}' });
  });

  it('fingerprints what shapes a run: the prompt, the allow-list, the action space', () => {
    const spec = { prompt: 'Order', allowedDomains: ['shop.test'] };
    const base = cacheFingerprint(spec, 'browser_toolset_20260801');
    expect(cacheFingerprint({ ...spec }, 'browser_toolset_20260801')).toBe(base);
    expect(cacheFingerprint({ ...spec, prompt: 'Order now' }, 'browser_toolset_20260801')).not.toBe(base);
    expect(cacheFingerprint({ ...spec, allowedDomains: ['other.test'] }, 'browser_toolset_20260801')).not.toBe(base);
    expect(cacheFingerprint(spec, 'computer_toolset_20260801')).not.toBe(base);
    // Limits are not the run's shape.
    expect(cacheFingerprint({ ...spec, maxSteps: 5, timeoutMs: 1000 }, 'browser_toolset_20260801')).toBe(base);
  });

  it('reads only entries of its own format', () => {
    const entry = { format: RUN_CACHE_FORMAT, versionId: 'v', fingerprint: 'f', toolType: 't', createdAt: '', sourceExecutionId: 'e', steps: [[{ tool: 'x', input: {}, page: 'p' }]] };
    expect(parseCacheEntry(entry)).toEqual(entry);
    expect(parseCacheEntry({ ...entry, format: 'other' })).toBeUndefined();
    expect(parseCacheEntry({ ...entry, steps: [[{ input: {} }]] })).toBeUndefined();
    expect(parseCacheEntry('nonsense')).toBeUndefined();
  });
});
