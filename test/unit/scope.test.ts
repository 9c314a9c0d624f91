import { describe, expect, it } from 'vitest';
import { Scope } from '../../src/runner/scope.js';

describe('Scope', () => {
  it('closes what was opened in reverse, each once, and close is idempotent', async () => {
    const closed: string[] = [];
    const scope = new Scope(() => undefined);
    const a = scope.use('a', { name: 'a' }, (r) => closed.push(r.name));
    scope.defer('b', async () => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      closed.push('b');
    });
    scope.use('c', 'c', (r) => closed.push(r));
    expect(a).toEqual({ name: 'a' });
    const first = scope.close();
    expect(scope.close()).toBe(first);
    await first;
    await scope.close();
    expect(closed).toEqual(['c', 'b', 'a']);
  });

  it('closes everything when the work throws, and refuses new steps once closed', async () => {
    const closed: string[] = [];
    const scope = new Scope(() => undefined);
    const work = async () => {
      try {
        scope.defer('session', () => closed.push('session'));
        scope.defer('video', () => closed.push('video'));
        throw new Error('the browser crashed');
      } finally {
        await scope.close();
      }
    };
    await expect(work()).rejects.toThrow('the browser crashed');
    expect(closed).toEqual(['video', 'session']);
    expect(() => scope.defer('late', () => undefined)).toThrow(/already closed/);
  });

  it('goes on past a failing step, reporting it by name, and never rejects', async () => {
    const closed: string[] = [];
    const failures: Array<{ step: string; message: string }> = [];
    const scope = new Scope((error, step) => failures.push({ step, message: (error as Error).message }));
    scope.defer('first', () => closed.push('first'));
    scope.defer('throws', () => {
      throw new Error('sync failure');
    });
    scope.defer('rejects', () => Promise.reject(new Error('async failure')));
    scope.defer('last', () => closed.push('last'));
    await expect(scope.close()).resolves.toBeUndefined();
    expect(closed).toEqual(['last', 'first']);
    expect(failures).toEqual([
      { step: 'rejects', message: 'async failure' },
      { step: 'throws', message: 'sync failure' },
    ]);
  });
});
