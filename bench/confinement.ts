/**
 * The confinement's cost (docs/specification.md#the-allow-list): load time of a page with 100 subresources on allowed.test, with the
 * confinement on (launch flags, egress proxy, Playwright guard) and off (host rules only), in
 * one run. Each mode gets its own Chromium and the same number of loads, alternating so that
 * neither profits from a warmer machine; figures are medians of fresh-context loads.
 */
import { chromium, type Browser } from 'playwright-core';

import { createConfinement } from '../src/browser/confinement.js';
import { allowedSiteHandler, startRecordingServer } from '../test/support/evil-server.js';

const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const COMMON_FLAGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const SUBRESOURCES = 100;
const WARMUP_LOADS = 2;
const MEASURED_LOADS = 10;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export async function benchConfinement(): Promise<Record<string, number>> {
  const site = await startRecordingServer('allowed.test', allowedSiteHandler({ evilPort: () => 0, udpPort: () => 0 }));
  const hostRules = `MAP allowed.test 127.0.0.1:${site.port}`;
  const confinement = createConfinement({ hostRules });
  const browsers: Browser[] = [];
  try {
    const confined = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...COMMON_FLAGS, ...confinement.launchArgs()] });
    browsers.push(confined);
    const open = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...COMMON_FLAGS, `--host-resolver-rules=${hostRules}`] });
    browsers.push(open);
    const url = `http://allowed.test/bench?n=${SUBRESOURCES}`;
    let blocked = 0;

    // `proxy`: flags and egress proxy without the Playwright guard, to split the cost by layer.
    const loadOnce = async (mode: 'on' | 'proxy' | 'off'): Promise<number> => {
      const guard = mode !== 'off' ? await confinement.openSessionGuard({ allowedDomains: ['allowed.test'], onBlocked: () => (blocked += 1) }) : undefined;
      const context = await (mode === 'off' ? open : confined).newContext(guard?.contextOptions ?? {});
      try {
        if (mode === 'on') await guard?.attach(context);
        const page = await context.newPage();
        const started = performance.now();
        await page.goto(url, { waitUntil: 'load' });
        return performance.now() - started;
      } finally {
        await context.close();
        await guard?.close();
      }
    };

    const samples: Record<'on' | 'proxy' | 'off', number[]> = { on: [], proxy: [], off: [] };
    for (let i = 0; i < WARMUP_LOADS + MEASURED_LOADS; i++) {
      for (const mode of i % 2 === 0 ? (['off', 'proxy', 'on'] as const) : (['on', 'proxy', 'off'] as const)) {
        const ms = await loadOnce(mode);
        if (i >= WARMUP_LOADS) samples[mode].push(ms);
      }
    }
    const offMs = median(samples.off);
    const onMs = median(samples.on);
    const proxyMs = median(samples.proxy);
    return {
      subresources: SUBRESOURCES,
      loads_per_mode: MEASURED_LOADS,
      confinement_off_median_ms: Math.round(offMs),
      confinement_on_median_ms: Math.round(onMs),
      confinement_on_over_off_ratio: Number((onMs / offMs).toFixed(2)),
      proxy_and_flags_only_median_ms: Math.round(proxyMs),
      proxy_and_flags_only_over_off_ratio: Number((proxyMs / offMs).toFixed(2)),
      blocked_requests: blocked,
    };
  } finally {
    for (const browser of browsers) await browser.close().catch(() => undefined);
    await site.close();
  }
}
