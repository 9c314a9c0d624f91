import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_ARGS } from './screencast-session.js';

/**
 * What the dashboard tests share (docs/testing.md): a real Chromium to drive the dashboard in,
 * and signing in with a key as a person does, on the page that asks for it.
 */

/** Debian's Chromium (or CHROMIUM_PATH), launched as the dashboard tests drive it. */
export function launchDashboardBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

/** Signs `page` in at `url` (the dashboard's settings by default) with `key`, and waits for the signed-in dashboard. */
export async function signInDashboard(page: Page, url: string, key: string): Promise<void> {
  await page.goto(url);
  await page.getByTestId('api-key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('new-workflow').waitFor();
}
