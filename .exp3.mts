import { startHarness, openCase, fixtureUrl } from './test/fixtures/confinement/harness.ts';
const h = await startHarness({ confined: true });
for (const mode of ['full', 'proxy-only'] as const) {
  const c = await openCase(h, { name: 'sw', mode });
  c.page.on('console', (m) => console.log(mode, 'console', m.text()));
  await c.navigate(fixtureUrl('sw-fetch', c.token));
  console.log(mode, await c.page.evaluate(async () => { try { const r = await navigator.serviceWorker.register('/assets/sw.js?t=x'); return 'registered ' + JSON.stringify([!!r.installing, !!r.waiting, !!r.active]); } catch (e) { return 'rejected ' + String(e); } }));
  await new Promise(r => setTimeout(r, 1500));
  console.log(mode, c.blocked);
  await c.finish();
}
console.log(h.evil.hits);
await h.close();
