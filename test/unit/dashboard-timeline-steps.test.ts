import { describe, expect, it } from 'vitest';

// The dashboard's modules find their root element as they load; the steps themselves need no page.
Object.assign(globalThis, { document: { getElementById: () => ({}) } });
// Imported by a computed path: the root typecheck has no JSX (the dashboard's own tsconfig checks timeline.tsx).
const timeline = '../../src/local-service/dashboard-ui/timeline.js';
const { buildSteps } = (await import(timeline)) as { buildSteps: (lines: Record<string, unknown>[]) => { errors: string[] }[] };

describe('the timeline\'s steps', () => {
  it('show a resource ceiling that ended the run in the step under way, in its words', () => {
    const steps = buildSteps([
      { type: 'model_turn', step: 1, t: 100, text: 'Opening the page.' },
      { type: 'action', step: 1, t: 150, action: 'left_click' },
      { type: 'model_turn', step: 2, t: 900, text: 'Scrolling.' },
      { type: 'resource_limit_reached', t: 1_400, detail: "browser's pages held 2.1 GiB (2300000000 bytes), past BROWSER_MEMORY_MAX_BYTES of 2.0 GiB (2147483648 bytes)" },
    ]);
    expect(steps.map((s) => s.errors)).toEqual([[], ["Ended: browser's pages held 2.1 GiB (2300000000 bytes), past BROWSER_MEMORY_MAX_BYTES of 2.0 GiB (2147483648 bytes)"]]);
  });
});
