import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import type { App } from './app.js';
import { ARTIFACT_CSP, artifactServing } from '../domain/artifact-serving.js';
import { HttpError, notFound } from './http-errors.js';
import { OPERATOR, PUBLIC } from './access.js';
import { pathParams } from './openapi.js';

/**
 * Files served by the local server, through @fastify/static (ranges, conditional requests,
 * HEAD): the dashboard's static files and the artifacts folder. Artifacts get a type chosen by
 * their name only: what a browser could render (an svg or html a page downloaded) comes as an
 * attachment (docs/operations.md#browser-security). Neither appears in the OpenAPI document.
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
/** Our headers win: send's own type and caching are off. */
const SEND_OPTIONS = { contentType: false, cacheControl: false, dotfiles: 'allow' } as const;

/** `/` and `/dashboard/{file}`: a flat folder of small files, no build step. */
export async function addDashboardRoutes(app: App): Promise<void> {
  const root = dashboardDir();
  await app.register(fastifyStatic, { root, serve: false });
  const serve = (reply: FastifyReply, name: string): FastifyReply => {
    if (!DASHBOARD_FILE.test(name)) throw notFound(['path'], 'file');
    // Small files from a local server: always revalidate so an edit shows at once.
    reply.headers({ 'Content-Type': DASHBOARD_TYPES[path.extname(name)] ?? 'application/octet-stream', 'Cache-Control': 'no-cache' });
    return reply.sendFile(name, root, SEND_OPTIONS);
  };
  app.route({ method: ['GET', 'HEAD'], url: '/', config: PUBLIC, schema: { hide: true }, handler: async (_request, reply) => serve(reply, 'index.html') });
  app.route({ method: ['GET', 'HEAD'], url: '/dashboard/:file', config: PUBLIC, schema: { hide: true, params: pathParams('file') }, handler: async (request, reply) => serve(reply, request.params.file) });
}

/**
 * `/artifacts/{relative path}` from `root` (none: every path answers 404). Paths that leave the
 * folder (`..`, symlinks pointing out, encoded separators) answer 404, as does anything not a
 * regular file: the resolved real path must lie inside the folder's real path.
 */
export function addArtifactRoutes(app: App, root: string | undefined): void {
  app.route({ method: ['GET', 'HEAD'], url: '/artifacts/*', config: OPERATOR, schema: { hide: true, params: pathParams('*') }, handler: async (request, reply) => {
    if (!root) throw new HttpError(404, [{ loc: ['path'], msg: 'no artifacts folder is configured', type: 'not_found' }]);
    // The wildcard as the router decoded it, exactly once, whatever the spelling of the target
    // (`/%61rtifacts/…`, an absolute-form target): never decoded again here.
    const { realRoot, file, decoded } = await resolveInside(root, request.params['*']);
    const serving = artifactServing(decoded);
    reply.headers({
      'Content-Type': serving.contentType,
      ...(serving.disposition ? { 'Content-Disposition': serving.disposition } : {}),
      'Content-Security-Policy': ARTIFACT_CSP,
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
    });
    return reply.sendFile(path.relative(realRoot, file), realRoot, SEND_OPTIONS);
  } });
}

async function resolveInside(root: string, decoded: string): Promise<{ realRoot: string; file: string; decoded: string }> {
  const outside = notFound(['path'], 'artifact');
  if (decoded.includes('\0') || decoded.includes('\\')) throw outside;
  // A path that does not resolve (missing, a loop, no permission) names no file here: 404, like any other.
  const realRoot = await fs.realpath(root).catch(() => undefined);
  if (!realRoot) throw outside;
  const candidate = path.resolve(realRoot, decoded.replace(/^\/+/, ''));
  if (!candidate.startsWith(realRoot + path.sep)) throw outside;
  const real = await fs.realpath(candidate).catch(() => undefined);
  if (!real || !real.startsWith(realRoot + path.sep)) throw outside;
  const stat = await fs.stat(real);
  if (!stat.isFile()) throw outside;
  return { realRoot, file: real, decoded };
}
