import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { attachFileChoosers } from '../../src/browser/file-chooser.js';
import { createPlaywrightSandbox, resolveChromiumPath } from '../../src/browser/playwright-sandbox.js';
import type { BlockedRequest, BrowserSandbox, BrowserSession, DownloadEvent, FileChooserEvent, SessionOptions, StagedFile } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir, neverAborted } from '../support/env.js';
import { CSV, NOTES, PDF, startFilesSite, TOTP_SEED, TOTP_USER, type FilesSite } from '../support/files-site.js';

/**
 * Downloads, file choosers and one-time codes on real Chromium, through the session port (the
 * model-facing tools come on top of it). Rows of the fixture pages sit at fixed places: a row
 * whose top is T is clicked at (120, T + 15).
 */

const silent = createSilentLogger();
const MAX_BYTES = 1024 * 1024;
const WAIT_MS = 20_000;
const INVOICE = Buffer.concat([Buffer.from('%PDF-1.7 invoice '), Buffer.from([0x00, 0xff, 0x80, 0x7f, 0x0a])]);

let site: FilesSite;
let sandbox: BrowserSandbox;
let dir: string;
let stagedFiles: StagedFile[];

beforeAll(async () => {
  [site, dir] = await Promise.all([startFilesSite(), tempDir('files-browser')]);
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: site.hostRules });
  const inputs = path.join(dir, 'inputs');
  await mkdir(inputs);
  stagedFiles = [
    { name: 'invoice.pdf', path: path.join(inputs, 'invoice.pdf') },
    { name: 'notes.txt', path: path.join(inputs, 'notes.txt') },
  ];
  await writeFile(stagedFiles[0]!.path, INVOICE);
  await writeFile(stagedFiles[1]!.path, NOTES);
});

afterAll(async () => {
  await sandbox?.close();
  await site?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Opened {
  session: BrowserSession;
  downloadsDir: string;
  downloads: DownloadEvent[];
  blocked: BlockedRequest[];
  choosers: FileChooserEvent[];
  /** Resolves with the first download event (past or future) matching. */
  download(predicate: (e: DownloadEvent) => boolean): Promise<DownloadEvent>;
  /** Resolves once a page has opened a file chooser (Playwright announces it after the click). */
  chooser(): Promise<FileChooserEvent>;
  blockedWhere(predicate: (e: BlockedRequest) => boolean): Promise<BlockedRequest>;
}

let open: Opened | undefined;
let sessions = 0;

async function openSession(extra: Partial<SessionOptions> = {}, withDownloads = true, signal = new AbortController().signal): Promise<Opened> {
  const downloadsDir = path.join(dir, `downloads-${++sessions}`);
  const emitter = new EventEmitter();
  const downloads: DownloadEvent[] = [];
  const blocked: BlockedRequest[] = [];
  const choosers: FileChooserEvent[] = [];
  const waitFor = <T>(list: T[], kind: string, predicate: (e: T) => boolean): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = list.find(predicate);
        if (!found) return;
        clearTimeout(timer);
        emitter.off(kind, check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        emitter.off(kind, check);
        reject(new Error(`no matching ${kind} event within ${WAIT_MS} ms; saw ${JSON.stringify(list)}`));
      }, WAIT_MS);
      emitter.on(kind, check);
      check();
    });
  const session = await sandbox.openSession(
    {
      executionId: `files-${sessions}`,
      viewport: { width: 800, height: 600 },
      allowedDomains: ['files.test'],
      onBlocked: (e) => {
        blocked.push(e);
        emitter.emit('blocked');
      },
      ...(withDownloads ? { downloads: { dir: downloadsDir, maxBytes: MAX_BYTES } } : {}),
      onDownload: (e) => {
        downloads.push(e);
        emitter.emit('download');
      },
      inputFiles: stagedFiles,
      onFileChooser: (e) => {
        choosers.push(e);
        emitter.emit('chooser');
      },
      ...extra,
    },
    signal,
  );
  open = {
    session,
    downloadsDir,
    downloads,
    blocked,
    choosers,
    download: (predicate) => waitFor(downloads, 'download', predicate),
    chooser: () => waitFor(choosers, 'chooser', () => true),
    blockedWhere: (predicate) => waitFor(blocked, 'blocked', predicate),
  };
  return open;
}

afterEach(async () => {
  await open?.session.close();
  open = undefined;
});

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
const clickRow = (s: BrowserSession, top: number) => s.click(120, top + 15, { button: 'left', clickCount: 1 }, neverAborted);
const ended = (e: DownloadEvent) => e.state !== 'started';

async function goto(s: BrowserSession, page: string): Promise<void> {
  const result = await s.navigate(`http://files.test/${page}`, new AbortController().signal);
  expect(result.ok, result.error).toBe(true);
}

describe('downloads', () => {
  it('saves a CSV from an allowed host with its name, size, hash and type', async () => {
    const o = await openSession();
    await goto(o.session, '');
    await clickRow(o.session, 20);
    const done = await o.download(ended);
    expect(done).toMatchObject({ id: 'download-1', state: 'completed', url: 'http://files.test/files/orders.csv', name: 'orders.csv', bytes: Buffer.byteLength(CSV), sha256: sha256(CSV), contentType: 'text/csv; charset=utf-8' });
    expect(done.path).toBe(path.join(o.downloadsDir, 'orders.csv'));
    expect(await readFile(done.path!, 'utf8')).toBe(CSV);
    expect(o.downloads.map((e) => e.state)).toEqual(['started', 'completed']);
  });

  it('saves a PDF reached through a redirect, under the URL it came from', async () => {
    const o = await openSession();
    await goto(o.session, '');
    await clickRow(o.session, 60);
    const done = await o.download(ended);
    expect(done).toMatchObject({ state: 'completed', url: 'http://files.test/files/report.pdf', name: 'report.pdf', bytes: PDF.length, sha256: sha256(PDF), contentType: 'application/pdf' });
    expect(await readFile(done.path!)).toEqual(PDF);
  });

  it('saves a download-attribute link and a client-side blob export, and numbers a name seen twice', async () => {
    const o = await openSession();
    await goto(o.session, '');
    await clickRow(o.session, 100);
    const notes = await o.download((e) => ended(e) && e.name.startsWith('notes'));
    expect(notes).toMatchObject({ state: 'completed', name: 'notes.txt', sha256: sha256(NOTES), contentType: 'text/plain' });
    await clickRow(o.session, 140);
    const blob = await o.download((e) => ended(e) && e.name.startsWith('export'));
    expect(blob).toMatchObject({ state: 'completed', name: 'export.csv', contentType: 'text/csv' });
    expect(blob.url).toMatch(/^blob:http:\/\/files\.test\//);
    expect(await readFile(blob.path!, 'utf8')).toBe('id,total\n1,9.99\n');
    await clickRow(o.session, 100);
    const again = await o.download((e) => ended(e) && e.id === 'download-3');
    expect(again).toMatchObject({ state: 'completed', name: 'notes (2).txt' });
    expect((await readdir(o.downloadsDir)).sort()).toEqual(['export.csv', 'notes (2).txt', 'notes.txt']);
  });

  it('refuses a download from a host outside the allow-list: blocked, never started, evil hears nothing', async () => {
    const o = await openSession();
    await goto(o.session, '');
    await clickRow(o.session, 180);
    const event = await o.blockedWhere((e) => e.url.startsWith('http://evil.test/'));
    expect(event.reason).toMatch(/not in the allow-list/);
    await o.session.settle(new AbortController().signal);
    expect(o.downloads).toEqual([]);
    expect(site.evil.hits).toEqual([]);
  });

  it('refuses a redirect hop to a host outside the allow-list', async () => {
    const o = await openSession();
    await goto(o.session, '');
    await clickRow(o.session, 220);
    const event = await o.blockedWhere((e) => e.url.startsWith('http://evil.test/'));
    expect(event.layer).toBe('proxy');
    await o.session.settle(new AbortController().signal);
    expect(o.downloads.filter((e) => e.state === 'completed')).toEqual([]);
    expect(site.evil.hits).toEqual([]);
  });

  it.each([
    ['streamed without a length', 260],
    ['with a declared length', 300],
  ])('cancels a download larger than the limit (%s) and keeps nothing', async (_what, top) => {
    const o = await openSession();
    await goto(o.session, '');
    await clickRow(o.session, top);
    const done = await o.download(ended);
    expect(done).toMatchObject({ state: 'failed', error: expect.stringMatching(new RegExp(`larger than the download limit of ${MAX_BYTES} bytes`)) });
    expect(await readdir(o.downloadsDir).catch(() => [])).toEqual([]);
  });

  it('cancels a download started in a popup (target=_blank) while it streams, near the limit', async () => {
    const o = await openSession();
    await goto(o.session, '');
    await clickRow(o.session, 380);
    const done = await o.download(ended);
    expect(done).toMatchObject({ state: 'failed', name: 'big.bin', error: expect.stringMatching(new RegExp(`larger than the download limit of ${MAX_BYTES} bytes`)) });
    // The stream has no end: only a cancel while it ran stops it. What the server sent bounds
    // what reached the disk; it stays within a few buffers of the limit, not the whole stream.
    const sent = site.streamed.get('/files/big.bin?from=popup') ?? 0;
    expect(sent).toBeGreaterThan(MAX_BYTES);
    expect(sent).toBeLessThan(64 * MAX_BYTES);
    expect(await readdir(o.downloadsDir).catch(() => [])).toEqual([]);
  });

  it('reports a download still running when the session closes (after its grace) as failed, before close resolves', async () => {
    const o = await openSession({ downloads: { dir: path.join(dir, 'no-grace'), maxBytes: MAX_BYTES, graceMs: 0 } });
    await goto(o.session, '');
    await clickRow(o.session, 340);
    await o.download((e) => e.state === 'started');
    await o.session.close();
    expect(o.downloads.map((e) => [e.state, e.error])).toEqual([
      ['started', undefined],
      ['failed', 'the run ended and the download did not finish within 0 ms'],
    ]);
  });

  it('gives no grace to a download when the run was stopped', async () => {
    const run = new AbortController();
    const o = await openSession({}, true, run.signal);
    await goto(o.session, '');
    await clickRow(o.session, 340);
    await o.download((e) => e.state === 'started');
    run.abort(new Error('deadline'));
    await o.session.close();
    expect(o.downloads.map((e) => [e.state, e.error])).toEqual([
      ['started', undefined],
      ['failed', 'the run was stopped before the download finished'],
    ]);
  });

  it('refuses every download when the session saves none', async () => {
    const o = await openSession({}, false);
    await goto(o.session, '');
    await clickRow(o.session, 20);
    const event = await o.blockedWhere((e) => e.layer === 'download');
    expect(event).toMatchObject({ url: 'http://files.test/files/orders.csv', reason: 'downloads are disabled' });
    expect(o.downloads).toEqual([]);
  });
});

describe('file choosers and inputs', () => {
  it('answers the file chooser a page opens with an input file, by name', async () => {
    const o = await openSession();
    await goto(o.session, 'upload.html');
    expect(o.session.pendingFileChooser()).toBeUndefined();
    await clickRow(o.session, 20);
    await o.chooser();
    expect(o.session.pendingFileChooser()).toEqual({ multiple: false, url: 'http://files.test/upload.html' });
    expect(o.choosers).toEqual([{ multiple: false, url: 'http://files.test/upload.html' }]);
    expect(await o.session.setInputFiles(['invoice.pdf'], { kind: 'chooser' }, neverAborted)).toEqual({ ok: true, names: ['invoice.pdf'] });
    expect(o.session.pendingFileChooser()).toBeUndefined();
    const received = site.next('upload');
    await clickRow(o.session, 100);
    expect(await received).toEqual([
      { field: 'doc', filename: 'invoice.pdf', bytes: INVOICE.length, sha256: sha256(INVOICE) },
      // The visible input was left empty: browsers send an empty file part for it.
      { field: 'attachment', filename: '', bytes: 0, sha256: sha256('') },
    ]);
  });

  it('fills the file input at a point', async () => {
    const o = await openSession();
    await goto(o.session, 'upload.html');
    expect(await o.session.setInputFiles(['NOTES.TXT'], { kind: 'point', x: 120, y: 75 }, neverAborted)).toEqual({ ok: true, names: ['notes.txt'] });
    const received = site.next('upload');
    await clickRow(o.session, 100);
    expect((await received).find((u) => u.field === 'attachment')).toEqual({ field: 'attachment', filename: 'notes.txt', bytes: Buffer.byteLength(NOTES), sha256: sha256(NOTES) });
  });

  it('gives nothing but the input files, and says why', async () => {
    const o = await openSession();
    await goto(o.session, 'upload.html');
    const uploadsBefore = site.uploads.length;
    expect(await o.session.setInputFiles(['invoice.pdf'], { kind: 'chooser' }, neverAborted)).toEqual({ ok: false, error: expect.stringMatching(/no file chooser is open/) });
    await clickRow(o.session, 20);
    await o.chooser();
    for (const name of ['/etc/passwd', '../inputs/invoice.pdf', stagedFiles[0]!.path, 'other.pdf']) {
      expect(await o.session.setInputFiles([name], { kind: 'chooser' }, neverAborted)).toEqual({ ok: false, error: `${JSON.stringify(name)} is not an input file; the input files are: invoice.pdf, notes.txt` });
    }
    expect(await o.session.setInputFiles(['invoice.pdf', 'notes.txt'], { kind: 'chooser' }, neverAborted)).toEqual({ ok: false, error: 'this file chooser takes one file' });
    expect(await o.session.setInputFiles(['invoice.pdf'], { kind: 'point', x: 120, y: 155 }, neverAborted)).toEqual({ ok: false, error: 'there is no file input at (120, 155)' });
    expect(await o.session.setInputFiles([], { kind: 'chooser' }, neverAborted)).toEqual({ ok: false, error: 'name at least one input file' });
    // The chooser is still waiting for a valid answer.
    expect(o.session.pendingFileChooser()).toEqual({ multiple: false, url: 'http://files.test/upload.html' });
    expect(site.uploads.length).toBe(uploadsBefore);
  });

  it('fills a file input the caller found itself (a toolset ref), and nothing else', async () => {
    // The element-level entry the toolset's refs will use, on a plain context: no session port.
    const browser = await chromium.launch({ executablePath: resolveChromiumPath(), args: ['--no-sandbox', `--host-resolver-rules=${site.hostRules}`] });
    try {
      const context = await browser.newContext();
      const files = attachFileChoosers(context, { files: stagedFiles, logger: silent });
      const page = await context.newPage();
      await page.goto('http://files.test/upload.html');
      expect(await files.setFilesOn(page, (await page.$('#send'))!, ['invoice.pdf'])).toEqual({ ok: false, error: 'that element is not a file input' });
      expect(await files.setFilesOn(page, (await page.$('#hidden-doc'))!, ['/etc/hostname'])).toEqual({ ok: false, error: expect.stringContaining('is not an input file') });
      expect(await files.setFilesOn(page, (await page.$('#hidden-doc'))!, ['invoice.pdf'])).toEqual({ ok: true, names: ['invoice.pdf'] });
      const received = site.next('upload');
      await page.click('#send');
      expect((await received).find((u) => u.field === 'doc')).toEqual({ field: 'doc', filename: 'invoice.pdf', bytes: INVOICE.length, sha256: sha256(INVOICE) });
    } finally {
      await browser.close();
    }
  });

  it('offers nothing when the execution has no input files', async () => {
    const o = await openSession({ inputFiles: [] });
    await goto(o.session, 'upload.html');
    await clickRow(o.session, 20);
    await o.chooser();
    expect(await o.session.setInputFiles(['invoice.pdf'], { kind: 'chooser' }, neverAborted)).toEqual({ ok: false, error: '"invoice.pdf" is not an input file; this execution has no input files' });
  });
});

describe('one-time codes', () => {
  it('types the current TOTP code, which the site checks with its own implementation', async () => {
    const vault = createSecretVault({ user: TOTP_USER, mfa: TOTP_SEED.toLowerCase().replace(/(.{4})/g, '$1 ') }, { type: 'object', properties: { user: { type: 'string' }, mfa: { type: 'string', format: 'totp', 'x-secret': true } } });
    const o = await openSession();
    await goto(o.session, 'login.html');
    await clickRow(o.session, 20);
    await o.session.typeText(TOTP_USER, neverAborted);
    await clickRow(o.session, 60);
    await o.session.typeText(vault.reveal('{{mfa}}'), neverAborted);
    const attempt = site.next('login');
    await clickRow(o.session, 100);
    const seen = await attempt;
    expect(seen).toMatchObject({ user: TOTP_USER, accepted: true });
    expect(seen.code).toMatch(/^\d{6}$/);
    // The page echoes the code; what the worker would write of it shows the placeholder.
    expect(vault.redact(`Welcome ${TOTP_USER}; code ${seen.code}`)).toBe(`Welcome ${TOTP_USER}; code {{mfa}}`);
  });
});
