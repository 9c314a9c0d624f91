import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { browserEnvironment, createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createBrowser } from '../../src/compose.js';
import { loadConfig } from '../../src/config/schema.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import type { Logger } from '../../src/telemetry/types.js';
import { commandLine, descendants } from '../support/processes.js';

/**
 * Chromium is started with a minimal environment: the worker's keys (API, model, AWS) never
 * reach a browser process, whatever a page makes of it. Read from /proc/<pid>/environ of every
 * Chromium process this test started.
 */

const KEYS = { ANTHROPIC_API_KEY: 'sk-ant-env-7c1d9e', AWS_SECRET_ACCESS_KEY: 'aws-secret-env-4b2f', API_KEY: 'service-key-env-9a3e' };
let sandbox: BrowserSandbox | undefined;

afterAll(async () => {
  await sandbox?.close();
  for (const name of Object.keys(KEYS)) delete process.env[name];
});

function environOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

describe("the browser's environment", () => {
  it('keeps only what Chromium needs', () => {
    const kept = browserEnvironment({ PATH: '/usr/bin', HOME: '/home/w', TZ: 'UTC', ...KEYS, REDIS_URL: 'redis://x' });
    expect(kept).toEqual({ PATH: '/usr/bin', HOME: '/home/w', TZ: 'UTC' });
  });

  it('no Chromium process of a session holds the worker’s keys', async () => {
    Object.assign(process.env, KEYS);
    sandbox = createPlaywrightSandbox({ logger: createSilentLogger(), hostRules: 'MAP env.test 127.0.0.1' });
    const session = await sandbox.openSession({ executionId: 'env', viewport: { width: 640, height: 480 }, allowedDomains: ['env.test'], onBlocked: () => undefined }, new AbortController().signal);
    try {
      const chromium = descendants().filter((p) => /chrom/.test(commandLine(p.pid)));
      // The browser process; its children (zygote, GPU, renderers) write their title over the
      // environment's memory, and inherit the browser's environment anyway.
      const main = chromium.filter((p) => !commandLine(p.pid).includes('--type='));
      expect(main.length).toBeGreaterThan(0);
      for (const p of main) expect(environOf(p.pid).some((v) => v.startsWith('PATH='))).toBe(true);
      for (const p of chromium) {
        const text = environOf(p.pid).join('\n');
        for (const [name, value] of Object.entries(KEYS)) {
          expect(text).not.toContain(`${name}=`);
          expect(text).not.toContain(value);
        }
      }
    } finally {
      await session.close();
    }
  });
});

describe("Chromium's own sandbox", () => {
  it('is said to be off, as a warning at start and a metric, when the worker runs as root', async () => {
    const warnings: string[] = [];
    const logger: Logger = { ...createSilentLogger(), warn: (_fields: unknown, message?: string) => void warnings.push(String(message)), child: () => logger };
    const browser = createBrowser(loadConfig({}), logger);
    await browser.close();
    const asRoot = process.getuid?.() === 0;
    expect(warnings.some((w) => /running as root.*sandbox.*OFF/.test(w))).toBe(asRoot);
    const metrics = createMetrics();
    metrics.setBrowserSandbox(!asRoot);
    expect(await metrics.registry.metrics()).toContain(`execution_worker_browser_sandbox ${asRoot ? 0 : 1}`);
  });
});
