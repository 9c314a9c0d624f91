/**
 * A block editor admin for the run cache's tests (block-editor-client.ts is its page): a real
 * editor framework from npm (ProseMirror), bundled with esbuild, served by a small HTTP server
 * that keeps what a user leaves (which sidebar panels are open) and the posts published, so a
 * test asserts exactly what was saved.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface BlockEditorPost {
  title: string;
  paragraphs: string[];
  categories: string[];
  tags: string[];
}

export interface BlockEditor {
  origin: string;
  host: string;
  hostRules: string;
  /** The posts published, in order. */
  posts: BlockEditorPost[];
  /** Which sidebar panels the user left open (the editor opens them so). */
  prefs: { categories: boolean; tags: boolean };
  /** Every request's path, in order. */
  hits: string[];
  stop(): Promise<void>;
}

export const CATEGORIES = ['News', 'Releases', 'Guides', 'Events'];

const HERE = path.dirname(fileURLToPath(import.meta.url));

function page(script: string): string {
  const options = CATEGORIES.map((c) => `<option>${c}</option>`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Add New Post ‹ Blog — Editor</title>
<style>
body { font: 15px system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 160px 1fr 280px; min-height: 100vh; }
nav { background: #1d2327; color: #fff; padding: 8px; position: relative; }
nav a { color: #fff; display: block; padding: 4px; }
nav .submenu { position: absolute; top: -1000em; left: 160px; background: #2c3338; }
main { padding: 16px 32px; }
header.bar { display: flex; justify-content: flex-end; gap: 8px; padding-bottom: 12px; }
#post-title { font-size: 32px; margin: 12px 0; outline: none; min-height: 40px; border-bottom: 1px dashed #ccc; }
.paragraph-block { outline: none; min-height: 24px; padding: 2px 0; border-left: 2px solid #eee; padding-left: 8px; margin: 6px 0; }
.paragraph-block p { margin: 0; }
aside { border-left: 1px solid #ddd; padding: 12px; }
aside h2 { margin: 0; }
aside button.toggle { width: 100%; text-align: left; font-size: 15px; padding: 8px; background: none; border: none; border-top: 1px solid #ddd; cursor: pointer; }
ul { list-style: none; padding-left: 8px; }
#prepublish, #postpublish { position: fixed; right: 0; top: 0; bottom: 0; width: 280px; background: #fff; border-left: 2px solid #333; padding: 16px; }
</style></head><body>
<nav aria-label="Main menu"><a href="/wp-admin/">Dashboard</a><a href="/wp-admin/edit.php">Posts</a><div class="submenu"><a href="/wp-admin/edit.php">All Posts</a><a href="/wp-admin/post-new.php">Add New</a></div><a href="/wp-admin/upload.php">Media</a></nav>
<main id="editor" aria-label="Editor content">
<header class="bar"><button type="button" id="save-draft">Save draft</button><button type="button" id="publish-open">Publish</button></header>
<h1 id="post-title" contenteditable="true" role="textbox" aria-label="Add title" aria-multiline="false" data-placeholder="Add title"></h1>
<div id="blocks" aria-label="Post content"></div>
</main>
<aside aria-label="Post settings">
<h2>Post</h2>
<section aria-label="Categories panel"><button type="button" class="toggle" id="categories-toggle" aria-expanded="false" aria-controls="categories-body">Categories</button>
<div id="categories-body" hidden><label for="category">Category</label> <select id="category"><option value="">Uncategorized</option>${options}</select></div></section>
<section aria-label="Tags panel"><button type="button" class="toggle" id="tags-toggle" aria-expanded="false" aria-controls="tags-body">Tags</button>
<div id="tags-body" hidden><label for="tag-input">Add New Tag</label> <input id="tag-input" type="text"><ul id="tag-tokens" aria-label="Tags added"></ul></div></section>
</aside>
<div id="prepublish" role="region" aria-label="Pre-publish checks" hidden><h2>Are you ready to publish?</h2><p>Double-check your settings before publishing.</p><button type="button" id="publish-confirm">Publish</button></div>
<div id="postpublish" role="region" aria-label="Post-publish panel" hidden><h2>Post published.</h2><p>Your post is live: <a id="post-link" href="#"></a></p></div>
<script>${script.replace(/<\/script/gi, '<\\/script')}</script>
</body></html>`;
}

export async function startBlockEditor(host = 'blog.test'): Promise<BlockEditor> {
  const bundle = await build({ entryPoints: [path.join(HERE, 'block-editor-client.ts')], bundle: true, write: false, format: 'iife', target: 'es2022', logLevel: 'silent' });
  const html = page(bundle.outputFiles[0]!.text);
  const posts: BlockEditorPost[] = [];
  const prefs = { categories: false, tags: false };
  const hits: string[] = [];
  const body = (req: http.IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (text += chunk));
      req.on('end', () => resolve(text));
      req.on('error', reject);
    });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://blog.test');
    hits.push(url.pathname);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    void (async () => {
      if (url.pathname === '/wp-admin/post-new.php') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(html);
      } else if (url.pathname === '/api/preferences' && req.method === 'GET') json(200, prefs);
      else if (url.pathname === '/api/preferences' && req.method === 'POST') {
        const given = JSON.parse(await body(req)) as Partial<typeof prefs>;
        prefs.categories = given.categories === true;
        prefs.tags = given.tags === true;
        json(200, prefs);
      } else if (url.pathname === '/api/posts' && req.method === 'POST') {
        posts.push(JSON.parse(await body(req)) as BlockEditorPost);
        json(201, { url: `http://${host}/?p=${posts.length}` });
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
      }
    })().catch((error: unknown) => {
      res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    host,
    hostRules: `MAP ${host} 127.0.0.1`,
    posts,
    prefs,
    hits,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
