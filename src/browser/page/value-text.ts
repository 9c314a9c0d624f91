/**
 * javascript_exec's answer as text (browser/playwright-tab.ts): called on the object the page's
 * expression yielded (`this`), it is its JSON, or its own text when it has none (a cycle, a
 * BigInt). Called with Runtime.callFunctionOn, in the page's own world.
 */
export function valueText(this: unknown): string {
  try {
    return JSON.stringify(this);
  } catch {
    return String(this);
  }
}
