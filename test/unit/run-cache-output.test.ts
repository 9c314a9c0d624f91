import { describe, expect, it } from 'vitest';
import type { ElementIdentity } from '../../src/browser/types.js';
import { compileSchema } from '../../src/domain/json-schema.js';
import { inputLeaves } from '../../src/run-cache/values.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { outputSources, readOutput } from '../../src/run-cache/page-output.js';
import type { PageReader } from '../../src/run-cache/types.js';
import { neverAborted as signal } from '../support/env.js';

/**
 * The run cache reads the output through the page reader port alone (docs/run-cache.md#replay):
 * a page here is its elements' identities and texts.
 */
function page(elements: Array<{ path: string; text: string }>): PageReader & { reads: string[] } {
  const reads: string[] = [];
  const identity = (path: string): ElementIdentity => ({ role: 'paragraph', name: '', tag: 'p', path });
  return {
    reads,
    async findText(value, limit) {
      reads.push(`findText(${value})`);
      return elements.filter((e) => e.text.includes(value)).slice(0, limit).map((e) => ({ identity: identity(e.path), text: e.text }));
    },
    async readText(wanted) {
      reads.push(`readText(${wanted.path})`);
      return elements.find((e) => e.path === wanted.path)?.text ?? null;
    },
    async pageText() {
      const text = elements.map((e) => e.text).join('\n');
      return { text, total: text.length, cut: false };
    },
  };
}

const firstPage = page([
  { path: 'main>p:nth-of-type(1)', text: 'Order A-1042 for Grace is confirmed' },
  { path: 'main>p:nth-of-type(2)', text: 'Total: 12.5 EUR' },
]);

describe('the run cache and the final page', () => {
  it('keeps where each output value showed, and reads the next run’s values from the same places', async () => {
    const recipe = await outputSources(firstPage, { order: 'A-1042', total: 12.5 }, inputLeaves({ name: 'Grace' }), signal);
    expect(recipe).toEqual({
      shape: { order: null, total: null },
      sources: [
        { path: 'order', kind: 'string', element: { role: 'paragraph', name: '', tag: 'p', path: 'main>p:nth-of-type(1)' }, before: 'Order ', after: ' for {{name}} is confirmed' },
        { path: 'total', kind: 'number', element: { role: 'paragraph', name: '', tag: 'p', path: 'main>p:nth-of-type(2)' }, before: 'Total: ', after: ' EUR' },
      ],
    });
    const next = page([
      { path: 'main>p:nth-of-type(1)', text: 'Order B-77 for Linus is confirmed' },
      { path: 'main>p:nth-of-type(2)', text: 'Total: 30 EUR' },
    ]);
    const validateOutput = compileSchema({ type: 'object', required: ['order', 'total'], properties: { order: { type: 'string' }, total: { type: 'number' } } });
    const read = await readOutput(next, recipe!, { vault: createSecretVault({ name: 'Linus' }, undefined), validateOutput, signal });
    expect(read).toEqual({ ok: true, output: { order: 'B-77', total: 30 } });
    expect(next.reads).toEqual(['readText(main>p:nth-of-type(1))', 'readText(main>p:nth-of-type(2))']);
  });

  it('says why when the page no longer holds the output, or there is no page', async () => {
    const recipe = (await outputSources(firstPage, { order: 'A-1042' }, [], signal))!;
    const gone = await readOutput(page([{ path: 'main>p:nth-of-type(9)', text: 'Order A-1' }]), recipe, { vault: createSecretVault(null, undefined), signal });
    expect(gone).toEqual({ ok: false, reason: 'the paragraph the output order was read from is not on the page' });
    const changed = await readOutput(page([{ path: 'main>p:nth-of-type(1)', text: 'Your order is on its way' }]), recipe, { vault: createSecretVault(null, undefined), signal });
    expect(changed).toEqual({ ok: false, reason: 'the text around order changed' });
    expect(await readOutput(undefined, recipe, { vault: createSecretVault(null, undefined), signal })).toEqual({ ok: false, reason: 'no open tab' });
  });

  it('keeps no recipe for an output the page cannot give: a boolean, a value not shown, no page', async () => {
    expect(await outputSources(firstPage, { confirmed: true }, [], signal)).toBeUndefined();
    expect(await outputSources(firstPage, { order: 'Z-9' }, [], signal)).toBeUndefined();
    expect(await outputSources(undefined, { order: 'A-1042' }, [], signal)).toBeUndefined();
  });
});
