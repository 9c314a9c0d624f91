import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { NamePart } from '../../src/contract/run-cache.js';
import { patternShape, recordIds } from '../../src/run-cache/precondition.js';

/**
 * A name pattern's own numbers (docs/run-cache.md#sources): only those that are the earlier
 * record's id, in its address too, may be another number on the next run; a number the address
 * does not hold is text of the name like any other.
 */
describe('the numbers of a name pattern', () => {
  const payload = { vendor: 'Cobalt Software Ltd', client: 'Acme' };

  it('lets the record id of the earlier link be another record id, and nothing else', () => {
    const parts: NamePart[] = [{ text: 'Invoice #5 from ' }, { path: ['vendor'] }];
    const shape = patternShape(parts, payload, recordIds('http://admin.test:8000/admin/invoices/invoice/5/change/'))!;
    expect(shape.test('invoice #7 from cobalt software ltd')).toBe(true);
    expect(shape.test('invoice #7 from other ltd')).toBe(false);
  });

  it('keeps a number the earlier address does not hold as it was written', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99_999 }), fc.integer({ min: 0, max: 99_999 }), fc.integer({ min: 0, max: 99_999 }), (own, other, id) => {
        fc.pre(own !== other && String(id) !== String(own));
        const parts: NamePart[] = [{ text: `Room ${own} for ` }, { path: ['client'] }];
        const shape = patternShape(parts, payload, recordIds(`/bookings/${id}/`))!;
        expect(shape.test(`room ${own} for acme`)).toBe(true);
        // Another room is another element, never the one the input names.
        expect(shape.test(`room ${other} for acme`)).toBe(false);
      }),
    );
  });

  it('frees a number wherever the earlier address holds it, and only that one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9_999 }), fc.integer({ min: 1, max: 9_999 }), fc.integer({ min: 1, max: 9_999 }), (id, year, next) => {
        fc.pre(String(id) !== String(year) && next !== year);
        const parts: NamePart[] = [{ text: `Report ${year} #${id} for ` }, { path: ['client'] }];
        const shape = patternShape(parts, payload, recordIds(`/reports/${id}/?view=full`))!;
        expect(shape.test(`report ${year} #${next} for acme`)).toBe(true);
        expect(shape.test(`report ${next} #${id} for acme`)).toBe(false);
      }),
    );
  });

  it('reads an address without its host, so a port is no record id', () => {
    expect([...recordIds('http://admin.test:8123/admin/invoice/42/change/')]).toEqual(['42']);
    expect(recordIds(undefined).size).toBe(0);
  });
});
