import { buildDashboard } from '../../scripts/build-dashboard.js';
import { buildPageScripts } from '../../scripts/build-page-scripts.js';

/**
 * Builds the page scripts (src/browser/page/) and the dashboard (src/local-service/dashboard-ui/) before any test file loads, so the tests run
 * in Chromium what the sources say now, not what the last `npm run build` left.
 */
export default async function setup(): Promise<void> {
  await buildPageScripts();
  await buildDashboard();
}
