import { rm } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createBrowser } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import type { Logger } from '../../src/telemetry/types.js';
import { hostRules, tempDir } from './env.js';
import { startShopServer, type ShopServer } from './shop-server.js';

/** The shop, a scratch folder, the worker's configuration and one browser, shared by a test file's runs. */
export interface ShopBrowser {
  shop: ShopServer;
  dir: string;
  config: Config;
  browser: BrowserSandbox;
}

/**
 * Starts the shop and one browser (shop.test mapped to loopback) before a file's tests and closes
 * them after: `env` adds to the configuration. The fields are set once `beforeAll` has run.
 */
export function useShopBrowser(name: string, env: Record<string, string>, logger: Logger): ShopBrowser {
  const rig = {} as ShopBrowser;
  beforeAll(async () => {
    [rig.shop, rig.dir] = await Promise.all([startShopServer(), tempDir(name)]);
    rig.config = loadConfig({ BROWSER_HOST_RULES: hostRules('shop.test'), WORK_DIR: rig.dir, ANTHROPIC_API_KEY: 'k', ...env });
    rig.browser = createBrowser(rig.config, logger);
  });
  afterAll(async () => {
    await rig.browser?.close();
    await rig.shop?.close();
    if (rig.dir) await rm(rig.dir, { recursive: true, force: true });
  });
  return rig;
}
