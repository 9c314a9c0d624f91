import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowser, createRecorder, createRunnerDeps } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { createLogLines } from '../support/log-lines.js';
import { hostRules, tempDir } from '../support/env.js';
import { startRecordingServer, type RecordingServer } from '../support/evil-server.js';
import { browser as member, finish, startScriptedModelServer, type RecordedRequest, type ScriptedTurn } from '../support/scripted-model-server.js';
import { ffprobe } from '../support/video-probe.js';

/**
 * The limits on what a page makes, configured small (docs/security.md#limits), on real Chromium
 * and real ffmpeg through the runner as compose.ts wires it: a console flood past
 * CONSOLE_BYTES_MAX, popups past BROWSER_TABS_MAX, and a page of noise whose video passes
 * VIDEO_MAX_BYTES. Each reached limit is one `resource_limit_reached` line, however often the page
 * reaches it; the agent is told what was dropped or closed; the run goes on to its end.
 */

/** The process log, read back: each limit is one warning there too. */
const processLog = createLogLines();
const logger = createLogger({ level: 'warn', destination: { write: (chunk: string) => processLog.write(chunk) } as unknown as NodeJS.WritableStream });
/** Lines of 1,000 bytes past a budget of 20 KiB: about 20 fit at once. */
const FLOOD_LINES = 200;
const LONG_LINES = 5;
const BYTES_MAX = 20 * 1024;
const FLOOD_PAGE = `<!doctype html><title>flood</title><p>flood</p><script>
for (let i = 0; i < ${LONG_LINES}; i++) console.log('y'.repeat(5000));
for (let i = 0; i < ${FLOOD_LINES}; i++) console.log(String(i).padStart(4, '0') + 'x'.repeat(996));
</script>`;
const POPUPS_PAGE = `<!doctype html><title>popups</title><p>popups</p><script>
for (let i = 0; i < 4; i++) window.open('/child?' + i, '_blank');
</script>`;
const CHILD_PAGE = '<!doctype html><title>child</title><p>child</p>';
/** A small canvas of fresh noise every frame, drawn over the whole viewport: the worst picture for an encoder. */
const NOISE_PAGE = `<!doctype html><title>noise</title><style>html,body{margin:0}canvas{width:100vw;height:100vh;image-rendering:pixelated}</style>
<canvas width="320" height="200"></canvas><script>
const c = document.querySelector('canvas').getContext('2d');
const img = c.createImageData(320, 200);
const draw = () => { const d = new Uint32Array(img.data.buffer); for (let i = 0; i < d.length; i++) d[i] = (Math.random() * 0xffffffff) | 0xff000000; c.putImageData(img, 0, 0); requestAnimationFrame(draw); };
draw();
</script>`;

let site: RecordingServer;
let dir: string;
let config: Config;
let sandbox: BrowserSandbox;

beforeAll(async () => {
  site = await startRecordingServer('limits', (req, res) => {
    const page = req.url?.startsWith('/flood') ? FLOOD_PAGE : req.url?.startsWith('/popups') ? POPUPS_PAGE : req.url?.startsWith('/noise') ? NOISE_PAGE : CHILD_PAGE;
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  });
  dir = await tempDir('limits');
  config = loadConfig({ BROWSER_HOST_RULES: hostRules('limits.test'), WORK_DIR: dir, ANTHROPIC_API_KEY: 'k', ANTHROPIC_MAX_RETRIES: '0', STEP_SCREENSHOTS: 'false' });
  sandbox = createBrowser(config, logger);
});

afterAll(async () => {
  await sandbox?.close();
  await site?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface ResultBlock {
  type: string;
  content?: Array<{ type: string; text?: string }> | string;
}
/** The texts of the tool results a request answers the previous turn with. */
function resultTexts(request: RecordedRequest): string[] {
  const last = (request.body as { messages: Array<{ content: unknown }> }).messages.at(-1)!;
  if (!Array.isArray(last.content)) return [];
  return (last.content as ResultBlock[])
    .filter((b) => b.type === 'tool_result')
    .map((b) => (typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => c.text ?? '').join('\n')));
}

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  lines: Array<Record<string, unknown>>;
}

/** One execution of `path` with `settings` over the configuration; `script` decides each turn. */
async function run(path: string, settings: Partial<Config>, script: (request: RecordedRequest, index: number) => ScriptedTurn, video?: { onLimit: () => void }): Promise<Run> {
  const server = await startScriptedModelServer(script);
  const runConfig: Config = { ...config, ANTHROPIC_BASE_URL: server.url, VIDEO_ENABLED: video !== undefined, ...settings };
  const recorder = createRecorder(runConfig, logger);
  try {
    const deps = createRunnerDeps({
      config: runConfig,
      logger,
      browser: sandbox,
      store: createLocalStore({ dir, prefix: '' }),
      ...(recorder ? { recorder } : {}),
      ...(video ? { observers: [(events) => void events.on('resource_limit_reached', ({ limit }) => (limit === 'VIDEO_MAX_BYTES' ? video.onLimit() : undefined))] } : {}),
    });
    const spec = { prompt: 'Look at the page', allowedDomains: ['limits.test'], startUrl: `http://limits.test:${site.port}${path}` };
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload: null, specification: spec }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const lines = readFileSync(fileURLToPath(summary.urls.logsUrl!), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    return { summary, requests: server.requests, lines };
  } finally {
    await recorder?.close?.();
    await server.stop();
  }
}

/** The `resource_limit_reached` lines of the run's logs.jsonl for `limit`; the process log has as many warnings for it. */
const limitLines = (r: Run, limit: string) => {
  const lines = r.lines.filter((l) => l.type === 'resource_limit_reached' && l.limit === limit);
  const warnings = processLog.lines.filter((l) => l.level === 'warn' && l.msg === `resource limit reached: ${limit}` && l.executionId === r.summary.executionId);
  expect(warnings).toHaveLength(lines.length);
  return lines;
};

describe('limits on what a page makes', () => {
  it('keeps a console flood within CONSOLE_BYTES_MAX, says how many lines were dropped, and logs each limit once', async () => {
    let kept = 0;
    let dropped = 0;
    const perRead: number[] = [];
    // read_console until every line the page logged is accounted for, kept or dropped.
    const r = await run('/flood', { CONSOLE_BYTES_MAX: BYTES_MAX }, (request, index) => {
      for (const text of index > 0 ? resultTexts(request) : []) {
        const shown = text.split('\n').filter((line) => line.startsWith('[log] ')).length;
        const more = Number(/\[(\d+) more entries not shown\]/.exec(text)?.[1] ?? 0);
        perRead.push(shown + more);
        kept += shown + more;
        dropped += Number(/(\d+) console lines were dropped: .*CONSOLE_BYTES_MAX/.exec(text)?.[1] ?? 0);
      }
      if (kept + dropped >= FLOOD_LINES + LONG_LINES || index >= 15) return finish('completed', { kept, dropped });
      return member('read_console', {});
    });
    expect(r.summary.document.status).toBe('completed');
    console.log(`console flood: ${kept} lines kept and ${dropped} dropped over ${perRead.length} reads (at most ${Math.max(...perRead)} at once, budget ${BYTES_MAX} bytes)`);
    expect(kept + dropped).toBe(FLOOD_LINES + LONG_LINES);
    expect(dropped).toBeGreaterThan(0);
    // What one read held fits the budget: lines of at least 1,000 bytes, 20 KiB at most.
    expect(Math.max(...perRead)).toBeLessThanOrEqual(Math.floor(BYTES_MAX / 1000));
    // Once each, though the budget was passed on every read and five lines were cut.
    const bytes = limitLines(r, 'CONSOLE_BYTES_MAX');
    expect(bytes).toHaveLength(1);
    expect(bytes[0]).toMatchObject({ max: BYTES_MAX, unit: 'bytes', action: 'cut' });
    expect(bytes[0]!.value as number).toBeGreaterThan(BYTES_MAX);
    const cut = limitLines(r, 'CONSOLE_LINE_MAX_CHARS');
    expect(cut).toHaveLength(1);
    expect(cut[0]).toMatchObject({ max: 2000, value: 5000, unit: 'chars', action: 'cut' });
    expect(r.summary.document.limits?.map((l) => l.limit).sort()).toEqual(['CONSOLE_BYTES_MAX', 'CONSOLE_LINE_MAX_CHARS']);
  }, 120_000);

  it('closes popups past BROWSER_TABS_MAX and tells the agent why', async () => {
    const told: string[] = [];
    let lastTabs: unknown;
    const r = await run('/popups', { BROWSER_TABS_MAX: 2 }, (request, index) => {
      for (const text of index > 0 ? resultTexts(request) : []) if (/BROWSER_TABS_MAX/.test(text)) told.push(text);
      if (told.length > 0 && index >= 2) {
        lastTabs = request.rawBody.slice(request.rawBody.lastIndexOf('"browser_state"'));
        return finish('completed', { told: true });
      }
      if (index >= 12) return finish('failed', undefined, 'never told');
      // A read after the popups: its result carries the line.
      return member(index === 0 ? 'list_tabs' : 'read_console', {});
    });
    expect(r.summary.document.status).toBe('completed');
    expect(told.join('\n')).toMatch(/A popup the page opened \(http:\/\/limits\.test:\d+\/child\?\d\) was closed: 2 pages were open, the most one execution may have \(BROWSER_TABS_MAX\)/);
    // Two tabs at most, whatever the page opened.
    expect(new Set(String(lastTabs).match(/\\?"tab_id\\?":\\?"tab_\d+/g)).size).toBeLessThanOrEqual(2);
    const closed = limitLines(r, 'BROWSER_TABS_MAX');
    expect(closed).toHaveLength(1);
    expect(closed[0]).toMatchObject({ max: 2, value: 3, unit: 'tabs', action: 'closed' });
  }, 120_000);

  for (const encoder of ['shared', 'per-execution'] as const) {
    it(`ends a video past VIDEO_MAX_BYTES playable, and the run goes on (${encoder} encoder)`, async () => {
      const maxBytes = 100_000;
      let limitAtTurn: number | undefined;
      let limitSeen = false;
      const r = await run(
        '/noise',
        { VIDEO_MAX_BYTES: maxBytes, VIDEO_ENCODER: encoder },
        (_request, index) => {
          if (limitSeen) limitAtTurn ??= index;
          // Two more seconds of the run after the video ended, then the end.
          if (limitAtTurn !== undefined && index >= limitAtTurn + 2) return finish('completed', { noise: true });
          if (index >= 60) return finish('failed', undefined, 'the video never reached its limit');
          return member('wait', { duration: 1 });
        },
        { onLimit: () => (limitSeen = true) },
      );
      expect(r.summary.document.status).toBe('completed');
      const stopped = limitLines(r, 'VIDEO_MAX_BYTES');
      expect(stopped).toHaveLength(1);
      expect(stopped[0]).toMatchObject({ max: maxBytes, unit: 'bytes', action: 'stopped' });
      expect(stopped[0]!.value as number).toBeGreaterThanOrEqual(maxBytes);
      expect(r.summary.document.limits).toEqual([expect.objectContaining({ limit: 'VIDEO_MAX_BYTES', action: 'stopped' })]);
      // The file is a whole video, every frame decodable, and it ends before the run did.
      const videoUrl = r.summary.urls.videoUrl;
      expect(videoUrl).toBeTruthy();
      const probe = await ffprobe(fileURLToPath(videoUrl!));
      expect(probe).toMatchObject({ codec: 'h264', pixFmt: 'yuv420p' });
      expect(probe.frames).toBeGreaterThan(0);
      expect(probe.durationMs).toBeGreaterThan(0);
      expect(probe.durationMs).toBeLessThan(r.summary.document.counters.durationMs - 1_500);
      const { size } = await stat(fileURLToPath(videoUrl!));
      console.log(`${encoder} encoder: video of ${size} bytes (limit ${maxBytes}, measured ${String(stopped[0]!.value)}), ${Math.round(probe.durationMs)} ms of a ${r.summary.document.counters.durationMs} ms run`);
    }, 180_000);
  }
});
