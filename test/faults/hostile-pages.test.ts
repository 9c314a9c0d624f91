import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { commandLine, stopAllDaemons, type DaemonProcess } from '../support/daemon-process.js';
import { startRecordingServer, type RecordingServer } from '../support/evil-server.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { pollUntil, startRig, type FaultRig } from './harness.js';

/**
 * Hostile pages through the daemon (docs/security.md#limits), each beside a well-behaved
 * execution on the same worker: a console flood (lines of 4 MB) and a tab storm (popups in a
 * loop). The worker's RSS stays under RSS_BOUND_MB while they run and after; Chromium is then
 * killed and the worker goes on. Before the fix the flood alone took the worker past 2.5 GB and
 * the kill ended it with `RangeError: Invalid string length`.
 */

/** Lines of 4 MB: 60 of them are 240 MB of console text, well past the bound if any is kept whole. */
const FLOOD_LINES = 60;
const LINE_BYTES = 4_000_000;
const RSS_BOUND_MB = 700;

const FLOOD_PAGE = `<!doctype html><title>flood</title><p>flood</p><script>
const line = 'x'.repeat(${LINE_BYTES});
let n = 0;
const burst = () => { for (let i = 0; i < 5 && n < ${FLOOD_LINES}; i++) console.log(line + (n++)); if (n < ${FLOOD_LINES}) setTimeout(burst, 0); else document.title = 'flooded'; };
burst();
</script>`;
const STORM_PAGE = `<!doctype html><title>storm</title><p>storm</p><script>
for (let i = 0; i < 40; i++) window.open('/child?' + i, '_blank');
</script>`;
const CHILD_PAGE = `<!doctype html><title>child</title>${'<div>cell</div>'.repeat(2000)}`;

let rig: FaultRig;
let site: RecordingServer;

beforeAll(async () => {
  site = await startRecordingServer('hostile', (req, res) => {
    const page = req.url?.startsWith('/flood') ? FLOOD_PAGE : req.url?.startsWith('/storm') ? STORM_PAGE : CHILD_PAGE;
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  });
  const waitThenFinish = (turn: number) => (turn === 0 ? browser('wait', { duration: 3 }) : turn === 1 ? browser('list_tabs', {}) : finish('completed', { done: true }));
  rig = await startRig('hostile', {
    flood: waitThenFinish,
    storm: waitThenFinish,
    fine: (turn) => (turn === 0 ? browser('left_click', { target: { type: 'coordinate', x: 250, y: 120 } }) : finish('completed', { fine: true })),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => {
  await rig?.close();
  await site?.close();
});

const isChromium = (pid: number) => /chrom/i.test(commandLine(pid).split(' ')[0] ?? '');
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

function hostileSpec(path: string): Record<string, unknown> {
  const origin = `http://127.0.0.1:${site.port}`;
  return { allowedDomains: [`127.0.0.1:${site.port}`], startUrl: `${origin}${path}` };
}

describe('hostile pages beside a well-behaved execution', () => {
  it('keeps the worker bounded, ends only its own runs, and survives its browser being killed', async () => {
    const worker: DaemonProcess = await rig.startWorker('hostile', `${rig.tmp}/work`, { WORKER_CONCURRENCY: '2' });
    let peakMb = 0;
    const sample = setInterval(() => {
      if (worker.alive) peakMb = Math.max(peakMb, rssMb(worker.pid));
    }, 100);
    try {
      const flood = await rig.enqueue('flood', { specification: { ...rig.spec('flood'), ...hostileSpec('/flood') } });
      const fine = await rig.enqueue('fine');
      const floodReport = await rig.api.waitForFinal(flood);
      const fineReport = await rig.api.waitForFinal(fine);
      expect(fineReport.path).toMatch(/\/completed$/);
      // The flood's own run ends as documented: its console cut, the run itself completes.
      expect(floodReport.path).toMatch(/\/completed$/);

      const storm = await rig.enqueue('storm', { specification: { ...rig.spec('storm'), ...hostileSpec('/storm') } });
      const fine2 = await rig.enqueue('fine');
      const stormReport = await rig.api.waitForFinal(storm);
      expect(stormReport.path).toMatch(/\/completed$/);
      expect((await rig.api.waitForFinal(fine2)).path).toMatch(/\/completed$/);
      // The storm's tabs were capped: the list the model read holds at most 10 tabs.
      const listed = JSON.stringify(rig.requestsOf('storm').at(-1)?.body ?? '');
      const lastList = listed.slice(listed.lastIndexOf('"browser_state"'));
      expect(new Set(lastList.match(/"tab_id":"tab_\d+"/g)).size).toBeLessThanOrEqual(10);

      expect(peakMb).toBeLessThan(RSS_BOUND_MB);

      // Chromium killed after them: the worker stays up and takes the next run.
      const chromium = worker.descendants().filter(isChromium);
      expect(chromium.length).toBeGreaterThan(0);
      for (const pid of chromium) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone with its parent
        }
      }
      await pollUntil('the old Chromium gone', () => (worker.descendants().some((pid) => chromium.includes(pid)) ? undefined : true));
      // A run taken before the worker has seen its browser go may end with browser_error (that run
      // only); the one after it gets a new browser and completes.
      const first = await rig.api.waitForFinal(await rig.enqueue('fine'));
      if (!first.path.endsWith('/completed')) expect(first.body).toMatchObject({ error: { code: 'browser_error' } });
      const after = await rig.enqueue('fine');
      expect((await rig.api.waitForFinal(after)).path).toMatch(/\/completed$/);
      expect(worker.alive).toBe(true);
      console.log(`hostile pages: worker peak RSS ${Math.round(peakMb)} MB (bound ${RSS_BOUND_MB} MB)`);
    } finally {
      clearInterval(sample);
    }
  }, 300_000);
});
