/**
 * `npm run bench -- widgets`: the widget conformance suite on real component libraries
 * (test/support/widget-tasks.ts), the ideal agent's path through each task: find, then
 * form_input. Printed per widget: calls (one per model turn for an agent that acts on each
 * answer), the tokens of what it read (tool results and its own inputs, at 4 characters a
 * token; the tool definitions and the first observation are the same for every task and left
 * out), and whether the component's own state holds the value. Then find's hit rate on the
 * description set written against those pages.
 */
import type { BrowserSandbox } from '../src/browser/types.js';
import { createBrowser } from '../src/compose.js';
import { loadConfig } from '../src/config/schema.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { startWidgetSite } from '../test/support/widget-site.js';
import { measureFindHits, openWidgetPage, runWidgetTask, WIDGET_TASKS } from '../test/support/widget-tasks.js';

export async function benchWidgets(): Promise<Record<string, number | string>> {
  const site = await startWidgetSite();
  const config = loadConfig({ ...process.env, BROWSER_HOST_RULES: 'MAP widgets.test 127.0.0.1,MAP pay.test 127.0.0.1,MAP legacy.test 127.0.0.1' });
  const browser: BrowserSandbox = createBrowser(config, createSilentLogger());
  const origin = `http://widgets.test:${site.port}`;
  const figures: Record<string, number | string> = {};
  let passed = 0;
  try {
    for (const task of WIDGET_TASKS) {
      const h = await openWidgetPage(browser, origin, task.page);
      try {
        const outcome = await runWidgetTask(h, task);
        if (outcome.ok) passed++;
        figures[`${task.widget}: calls, tokens read, success`] = `${h.read.calls}, ${Math.ceil(h.read.chars / 4)}, ${outcome.ok ? 'yes' : `no (${outcome.detail.slice(0, 120)})`}`;
      } finally {
        await h.close();
      }
    }
    figures['widget tasks completed'] = `${passed}/${WIDGET_TASKS.length}`;
    const found = await measureFindHits(browser, origin);
    figures['find: first answer is the intended element'] = `${found.hits}/${found.total} (${((100 * found.hits) / found.total).toFixed(1)}%)`;
    if (found.misses.length > 0) figures['find: misses'] = found.misses.join('; ');
  } finally {
    await browser.close();
    await site.close();
  }
  return figures;
}
