import { createReadStream, existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { ARTIFACT_CSP, artifactServing } from '../domain/artifact-serving.js';
import { notFound } from './http-utils.js';

/**
 * Files served by the local server: the dashboard's static files and the artifacts folder.
 * Artifacts get HTTP range requests, so a `<video>` can seek, and a type chosen by their name
 * only: what a browser could render (an svg or html a page downloaded) comes as an attachment
 * (docs/api.md#artifacts).
 */

/** The dashboard's own files: our code, so their real types. */
const DASHBOARD_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * The folder holding package.json, found by walking up from this module: the same from `src/`
 * (tests run TypeScript directly) and from `dist/` (the built CLI).
 */
export function packageRoot(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
}

export function dashboardDir(): string {
  return path.join(packageRoot(), 'src', 'local-service', 'dashboard');
}

const DASHBOARD_FILE = /^[a-z0-9-]+\.(html|js|css|svg)$/;

/** `/` and `/dashboard/{file}`: a flat folder of small files, no build step. */
export async function serveDashboard(req: http.IncomingMessage, res: http.ServerResponse, name: string): Promise<void> {
  if (!DASHBOARD_FILE.test(name)) throw notFound(['path'], 'file');
  const file = path.join(dashboardDir(), name);
  const body = await fs.readFile(file).catch(() => undefined);
  if (!body) throw notFound(['path'], 'file');
  res.writeHead(200, {
    'Content-Type': DASHBOARD_TYPES[path.extname(name)] ?? 'application/octet-stream',
    'Content-Length': body.length,
    // Small files from a local server: always revalidate so an edit shows at once.
    'Cache-Control': 'no-cache',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/**
 * `/artifacts/{relative path}` from `root`. Paths that leave the folder (`..`, symlinks
 * pointing out, encoded separators) answer 404, as does anything not a regular file.
 */
export async function serveArtifact(req: http.IncomingMessage, res: http.ServerResponse, root: string, relative: string): Promise<void> {
  const file = await resolveInside(root, relative);
  const stat = await fs.stat(file);
  const size = stat.size;
  // resolveInside has decoded the same text successfully.
  const serving = artifactServing(decodeURIComponent(relative));
  const headers: Record<string, string | number> = {
    'Content-Type': serving.contentType,
    ...(serving.disposition ? { 'Content-Disposition': serving.disposition } : {}),
    'Content-Security-Policy': ARTIFACT_CSP,
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Accept-Ranges': 'bytes',
    'Last-Modified': stat.mtime.toUTCString(),
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
  };

  const range = parseRange(req.headers.range, size);
  if (range === 'unsatisfiable') {
    res.writeHead(416, { ...headers, 'Content-Range': `bytes */${size}` }).end();
    return;
  }
  const [start, end] = range ?? [0, size - 1];
  const length = size === 0 ? 0 : end - start + 1;
  if (range) headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  headers['Content-Length'] = length;
  res.writeHead(range ? 206 : 200, headers);
  if (req.method === 'HEAD' || length === 0) {
    res.end();
    return;
  }
  // A viewer seeking closes the connection mid-stream: that is normal, not an error to report.
  await pipeline(createReadStream(file, { start, end }), res).catch(() => undefined);
}

async function resolveInside(root: string, relative: string): Promise<string> {
  const outside = notFound(['path'], 'artifact');
  let decoded: string;
  try {
    decoded = decodeURIComponent(relative);
  } catch {
    throw outside;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) throw outside;
  const realRoot = await fs.realpath(root).catch(() => undefined);
  if (!realRoot) throw outside;
  const candidate = path.resolve(realRoot, decoded.replace(/^\/+/, ''));
  if (!candidate.startsWith(realRoot + path.sep)) throw outside;
  const real = await fs.realpath(candidate).catch(() => undefined);
  if (!real || !real.startsWith(realRoot + path.sep)) throw outside;
  const stat = await fs.stat(real);
  if (!stat.isFile()) throw outside;
  return real;
}

/**
 * One `bytes=` range (`a-b`, `a-`, `-n`) as inclusive offsets; `undefined` serves the whole
 * file (no header, several ranges, or a unit other than bytes, all allowed by RFC 9110).
 */
export function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return undefined;
  let start: number;
  let end: number;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(first);
    end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
    if (last !== '' && Number(last) < start) return undefined;
  }
  if (start >= size || size === 0) return 'unsatisfiable';
  return [start, end];
}
