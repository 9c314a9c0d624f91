import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { handleRedmine } from './widget-redmine.js';
import { startStaticServer, type StaticServer } from './static-server.js';

/**
 * The widget conformance pages (test/fixtures/widgets/): each hosts one real component library
 * loaded from its published dist files, served from node_modules under `/lib/<package>/…` (the
 * packages are dev dependencies; nothing is bundled or copied). The Redmine-like page's
 * requests are answered by widget-redmine.ts.
 */
const PAGES = fileURLToPath(new URL('../fixtures/widgets/', import.meta.url));
const MODULES = fileURLToPath(new URL('../../node_modules/', import.meta.url));
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.json': 'application/json' };

export function startWidgetSite(): Promise<StaticServer> {
  return startStaticServer({
    root: PAGES,
    handle: async (req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (!path.startsWith('/lib/')) return handleRedmine(req, res);
      const relative = normalize(decodeURIComponent(path.slice('/lib/'.length)));
      if (relative.split(sep).includes('..')) {
        res.writeHead(403).end();
        return true;
      }
      try {
        const content = await readFile(join(MODULES, relative));
        res.writeHead(200, { 'content-type': TYPES[extname(relative)] ?? 'application/octet-stream', 'cache-control': 'max-age=600' }).end(content);
      } catch {
        res.writeHead(404).end();
      }
      return true;
    },
  });
}
