import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { awaitHttp, spawnApp, stopApp, type AppProcess } from './app-process.js';

/**
 * DokuWiki, the wiki, as Debian packages it (`apt-get install dokuwiki php-cli`), served for one
 * test file by PHP's built-in server on loopback: its code from /usr/share/dokuwiki, and a private
 * configuration and data folder (pages, users, ACL), removed by `stop`.
 *
 * Debian's DokuWiki takes its configuration folder from `DOKU_CONF` when it is already defined
 * (inc/preload.php); a file PHP runs before every script (`auto_prepend_file`) defines it, and the
 * folder's local.php moves the data (`savedir`) into the temporary folder too. Debian's own
 * /etc/dokuwiki and /var/lib/dokuwiki are read, never written.
 */

const DOKUWIKI_ROOT = '/usr/share/dokuwiki';
const MAIN_CONF = '/etc/dokuwiki';
const BOOT_TIMEOUT_MS = 60_000;
const DATA_DIRS = ['pages', 'attic', 'meta', 'media', 'media_attic', 'media_meta', 'cache', 'index', 'locks', 'tmp', 'log'];

export interface DokuWikiUser {
  login: string;
  password: string;
  name: string;
}

export interface DokuWiki {
  /** `http://{host}:{port}` */
  origin: string;
  host: string;
  hostRules: string;
  users: DokuWikiUser[];
  /** A page's wiki text as DokuWiki saved it (`ns:page`), or undefined when there is none. */
  page(id: string): Promise<string | undefined>;
  /** The page's change log, newest last: who saved it, with which summary. */
  changes(id: string): Promise<Array<{ user: string; summary: string; type: string }>>;
  stop(): Promise<void>;
}

export function dokuwikiMissing(): string | undefined {
  if (!existsSync(path.join(DOKUWIKI_ROOT, 'doku.php'))) return `DokuWiki is not installed (${DOKUWIKI_ROOT}): apt-get install dokuwiki php-cli (.ci/run does)`;
  return undefined;
}

export async function startDokuWiki(options: { host?: string; users: DokuWikiUser[]; pages?: Record<string, string> }): Promise<DokuWiki> {
  const missing = dokuwikiMissing();
  if (missing) throw new Error(missing);
  const host = options.host ?? 'wiki.test';
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dokuwiki-'));
  let app: AppProcess | undefined;
  try {
    await prepare(dir, options.users, options.pages ?? {});
    // PHP's built-in server takes no port 0: a port the kernel just gave another socket is free,
    // unless something else takes it first, and then the server says so and exits.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      app = spawnApp('dokuwiki', 'php', ['-d', `auto_prepend_file=${path.join(dir, 'prepend.php')}`, '-S', `127.0.0.1:${port}`, '-t', DOKUWIKI_ROOT], {
        cwd: dir,
        // Several workers: the pages load their scripts and styles through PHP too.
        env: { PHP_CLI_SERVER_WORKERS: '4' },
      });
      const ready = await awaitHttp(`http://127.0.0.1:${port}/doku.php`, BOOT_TIMEOUT_MS, app).then(
        () => true,
        (error: Error) => {
          // Exited (the port was taken meanwhile): try another; alive and silent: give up.
          if (app!.stderr().includes('Address already in use') && attempt < 3) return false;
          throw new Error(`${error.message}\n${app!.stderr().slice(-2000)}`);
        },
      );
      if (ready) {
        const server = app;
        const dataDir = path.join(dir, 'data');
        return {
          origin: `http://${host}:${port}`,
          host,
          hostRules: `MAP ${host} 127.0.0.1`,
          users: options.users,
          async page(id) {
            const file = path.join(dataDir, 'pages', ...id.split(':')) + '.txt';
            return existsSync(file) ? readFile(file, 'utf8') : undefined;
          },
          async changes(id) {
            const file = path.join(dataDir, 'meta', ...id.split(':')) + '.changes';
            if (!existsSync(file)) return [];
            // date, ip, type, id, user, summary, extra: tab-separated, one change a line.
            return (await readFile(file, 'utf8'))
              .trim()
              .split('\n')
              .map((line) => line.split('\t'))
              .map((f) => ({ type: f[2] ?? '', user: f[4] ?? '', summary: f[5] ?? '' }));
          },
          stop: () => stopApp(server, dir),
        };
      }
    }
  } catch (error) {
    await stopApp(app, dir);
    throw error;
  }
}

async function prepare(dir: string, users: DokuWikiUser[], pages: Record<string, string>): Promise<void> {
  const conf = path.join(dir, 'conf');
  const data = path.join(dir, 'data');
  await mkdir(conf);
  for (const sub of DATA_DIRS) await mkdir(path.join(data, sub), { recursive: true });
  await writeFile(path.join(dir, 'prepend.php'), `<?php\nif (!defined('DOKU_CONF')) define('DOKU_CONF', ${phpString(conf + '/')});\n`);
  await writeFile(
    path.join(conf, 'local.php'),
    [
      '<?php',
      `$conf['savedir'] = ${phpString(data)};`,
      "$conf['title'] = 'Operations wiki';",
      "$conf['lang'] = 'en';",
      "$conf['useacl'] = 1;",
      "$conf['authtype'] = 'authplain';",
      "$conf['superuser'] = '@admin';",
      // No draft saved on a timer while a page is edited, no page lock to wait for.
      "$conf['usedraft'] = 0;",
      "$conf['locktime'] = 0;",
      '',
    ].join('\n'),
  );
  // authplain: login:hash:name:mail:groups (a SHA-1 hash is one of the formats it reads).
  const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
  await writeFile(path.join(conf, 'users.auth.php'), users.map((u) => `${u.login}:${sha1(u.password)}:${u.name}:${u.login}@example.test:user`).join('\n') + '\n');
  // Anyone reads; signed-in users edit and upload.
  await writeFile(path.join(conf, 'acl.auth.php'), '*\t@ALL\t1\n*\t@user\t8\n');
  for (const name of ['plugins.php', 'plugins.required.php', 'plugins.local.php']) {
    if (existsSync(path.join(MAIN_CONF, name))) await copyFile(path.join(MAIN_CONF, name), path.join(conf, name));
  }
  for (const [id, text] of Object.entries(pages)) {
    const file = path.join(data, 'pages', ...id.split(':')) + '.txt';
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
  }
}

function phpString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
