import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { STRUCTURE_KEY } from '../../src/browser/page/keys.js';
import { AX_ANNOTATE_FUNCTION, SETTLE_PROBE_SOURCE, STILL_WAIT_SOURCE, STRUCTURE_SOURCE, VALUE_TEXT_FUNCTION } from '../../src/browser/page-scripts.generated.js';

/**
 * The page scripts as the browser receives them (built from src/browser/page/ by
 * scripts/build-page-scripts.ts, in this suite's global setup): self-contained expressions that
 * put in the page's global scope only what an entry installs on purpose. The integration tests
 * run them in Chromium; here their shape is checked where nothing else is defined.
 */
const SOURCES = { STRUCTURE_SOURCE, SETTLE_PROBE_SOURCE, STILL_WAIT_SOURCE };

describe('the built page scripts', () => {
  it('need nothing from outside the page: no module system, no loader helpers', () => {
    for (const [name, source] of Object.entries(SOURCES)) {
      expect(source, name).not.toMatch(/\brequire\(|\bimport\s*[({'"]|\bexport\s|__name\(/);
      // One expression: the build's wrapper, called.
      expect(source.startsWith('(() => {'), name).toBe(true);
      expect(source.endsWith('})()'), name).toBe(true);
    }
  });

  it('the functions sent to an object are self-contained declarations that run their export with its this and arguments', () => {
    for (const [name, source] of Object.entries({ AX_ANNOTATE_FUNCTION, VALUE_TEXT_FUNCTION })) {
      expect(source, name).not.toMatch(/\brequire\(|\bimport\s*[({'"]|\bexport\s|__name\(/);
      expect(source.startsWith('function (...args) {'), name).toBe(true);
    }
    const context = vm.createContext({});
    const valueText = vm.runInContext(`(${VALUE_TEXT_FUNCTION})`, context) as (this: unknown) => string;
    expect(valueText.call({ a: [1, 'x'] })).toBe('{"a":[1,"x"]}');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(valueText.call(cycle)).toBe('[object Object]');
    expect(valueText.call({ n: 1n })).toBe('[object Object]');
    expect(Object.getOwnPropertyNames(context)).toEqual([]);
  });

  it("the names of the accessibility tree reach the structure's annotate, and nothing else is touched", () => {
    const given: unknown[][] = [];
    const context = vm.createContext({});
    Object.defineProperty(context, STRUCTURE_KEY, { value: { annotate: (...args: unknown[]) => given.push(args) } });
    const annotateNames = vm.runInContext(`(${AX_ANNOTATE_FUNCTION})`, context) as (infos: unknown[], ...elements: unknown[]) => void;
    const infos = [{ role: 'button', name: 'Pay', description: '' }];
    const element = { nodeType: 1 };
    annotateNames(infos, element, null);
    expect(given).toEqual([[infos, [element, null]]]);
    // A world without the structure (a document replaced meanwhile) is left as it is.
    expect(() => vm.runInContext(`(${AX_ANNOTATE_FUNCTION})`, vm.createContext({}))(infos, element)).not.toThrow();
  });

  it("the still-wait is an expression whose value is its exports, leaving the page's scope as it was", () => {
    const context = vm.createContext({});
    const exports = vm.runInContext(STILL_WAIT_SOURCE, context) as Record<string, unknown>;
    expect(Object.keys(exports).sort()).toEqual(['stillWait', 'stopWaits']);
    expect(Object.getOwnPropertyNames(context)).toEqual([]);
  });

  it('the structure installs one non-enumerable global, once', () => {
    const observed: unknown[] = [];
    class MutationObserver {
      observe(target: unknown) {
        observed.push(target);
      }
    }
    const document = {};
    const listened: string[] = [];
    // What a page has that the structure uses when it installs: its observers and its events (scrolls are watched).
    const addEventListener = (type: string) => listened.push(type);
    const context = vm.createContext({ MutationObserver, document, addEventListener });
    vm.runInContext(STRUCTURE_SOURCE, context);
    vm.runInContext(STRUCTURE_SOURCE, context);
    const installed = Object.getOwnPropertyNames(context).filter((n) => !['MutationObserver', 'document', 'addEventListener'].includes(n));
    expect(installed).toEqual([STRUCTURE_KEY]);
    expect(Object.keys(context)).not.toContain(STRUCTURE_KEY);
    const api = (context as Record<string, Record<string, unknown>>)[STRUCTURE_KEY]!;
    expect(typeof api.readPage).toBe('function');
    // Installed once: a second evaluation in the same world changes nothing.
    expect(observed).toEqual([document]);
    // It listens to nothing: what it reads, it reads when asked.
    expect(listened).toEqual([]);
  });
});
