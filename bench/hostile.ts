/**
 * `npm run bench -- hostile`: the hostile-page suite's pages (test/faults/hostile-pages.test.ts)
 * through a real worker daemon, each beside a well-behaved execution, then Chromium killed and
 * two more runs. Prints the worker's peak RSS (its Node process only: Chromium's processes are
 * bounded per execution, docs/security.md#limits), each run's outcome and time.
 */
import { readFileSync } from 'node:fs';
import { startRig } from '../test/faults/harness.js';
import { commandLine } from '../test/support/daemon-process.js';
import { HOSTILE_CASES, hostileSiteHandler, startRecordingServer } from '../test/support/evil-server.js';

const MEMORY_MAX_BYTES = 1024 ** 3;
const HOSTILE_NAMES = ['flood', 'storm', 'giant', 'bomb', 'noise'] as const;

const rssMb = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
};

export async function benchHostile(): Promise<Record<string, number | string>> {
  const site = await startRecordingServer('hostile', hostileSiteHandler);
  const rig = await startRig('bench-hostile', HOSTILE_CASES);
  const figures: Record<string, number | string> = {};
  try {
    const worker = await rig.startWorker('hostile', `${rig.tmp}/work`, { WORKER_CONCURRENCY: '2', BROWSER_MEMORY_MAX_BYTES: String(MEMORY_MAX_BYTES) });
    let peakMb = 0;
    const sample = setInterval(() => {
      if (worker.alive) peakMb = Math.max(peakMb, rssMb(worker.pid));
    }, 100);
    const outcome = (report: { path: string; body: unknown }) => {
      const code = (report.body as { error?: { code?: string } }).error?.code;
      return report.path.endsWith('/completed') ? 'completed' : `failed ${code ?? ''}`.trim();
    };
    try {
      for (const name of HOSTILE_NAMES) {
        const started = Date.now();
        const specification = { ...rig.spec(name), allowedDomains: [`127.0.0.1:${site.port}`], startUrl: `http://127.0.0.1:${site.port}/${name}` };
        const [hostile, fine] = await Promise.all([rig.enqueue(name, { specification }), rig.enqueue('fine')]);
        const [hostileReport, fineReport] = await Promise.all([rig.api.waitForFinal(hostile), rig.api.waitForFinal(fine)]);
        figures[`${name}: outcome`] = outcome(hostileReport);
        figures[`${name}: the run beside it`] = outcome(fineReport);
        figures[`${name}: both done (s)`] = ((Date.now() - started) / 1000).toFixed(1);
        figures[`worker peak RSS after ${name} (MB)`] = Math.round(peakMb);
      }
      for (const pid of worker.descendants().filter((p) => /chrom/i.test(commandLine(p).split(' ')[0] ?? ''))) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone with its parent
        }
      }
      for (let i = 0; i < 2; i++) figures[`run ${i + 1} after Chromium was killed`] = outcome(await rig.api.waitForFinal(await rig.enqueue('fine')));
      figures['worker alive after all'] = worker.alive ? 'yes' : 'no';
      figures['worker peak RSS under the suite (MB)'] = Math.round(peakMb);
    } finally {
      clearInterval(sample);
    }
  } finally {
    await rig.close();
    await site.close();
  }
  return figures;
}
