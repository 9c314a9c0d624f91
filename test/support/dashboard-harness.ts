import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startHarness, type Harness } from '../contract/local-api-harness.js';
import { launchDashboardBrowser } from './dashboard-browser.js';

/**
 * A dashboard test file's setting, started once for its tests: the local API writing artifacts
 * under a temporary folder of its own (where the test plays the worker), and a page in real
 * Chromium to drive the dashboard in.
 */
export interface Dashboard {
  h: Harness;
  browser: Browser;
  page: Page;
  /** The local API's ARTIFACTS_DIR: an execution's files are under `executions/<id>/`. */
  artifactsDir: string;
}

/**
 * Starts the dashboard's setting before the file's tests (its folder named after `name`) and
 * closes it after them, its folder removed. Its parts are read in the tests and their hooks.
 * `acceptDialogs`: the page accepts every confirm() (a delete's "are you sure?").
 */
export function useDashboard(name: string, opts: { acceptDialogs?: boolean } = {}): Readonly<Dashboard> {
  let started: Partial<Dashboard> = {};
  beforeAll(async () => {
    started.artifactsDir = await fs.mkdtemp(path.join(os.tmpdir(), `${name}-`));
    started.h = await startHarness({ artifactsDir: started.artifactsDir, network: true });
    started.browser = await launchDashboardBrowser();
    started.page = await started.browser.newPage();
    if (opts.acceptDialogs) started.page.on('dialog', (dialog) => void dialog.accept());
  });
  afterAll(async () => {
    const { browser, h, artifactsDir } = started;
    started = {};
    await browser?.close();
    await h?.close();
    if (artifactsDir) await fs.rm(artifactsDir, { recursive: true, force: true });
  });
  const part = <K extends keyof Dashboard>(key: K): Dashboard[K] => {
    const value = started[key];
    if (value === undefined) throw new Error(`the dashboard's ${key} is there only while its tests run (useDashboard starts it in beforeAll)`);
    return value;
  };
  return {
    get h() {
      return part('h');
    },
    get browser() {
      return part('browser');
    },
    get page() {
      return part('page');
    },
    get artifactsDir() {
      return part('artifactsDir');
    },
  };
}
