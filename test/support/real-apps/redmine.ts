import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { awaitHttp, spawnApp, stopApp, type AppProcess } from './app-process.js';

/**
 * Redmine, the issue tracker, as Debian packages it (`apt-get install redmine redmine-sqlite`),
 * served for one test file on loopback: a private instance folder with its own SQLite database
 * (a copy of a prepared template), its own secret, files and logs, all removed by `stop`.
 *
 * Debian's Redmine is multi-tenant: `REDMINE_INSTANCE` names a folder under
 * /usr/share/redmine/instances (a link to /var/lib/redmine). The harness gives it a relative path
 * that climbs to the root and down to its temporary folder, so no file outside that folder is
 * written and no root rights are needed.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SERVER_SCRIPT = path.join(HERE, 'redmine-server.rb');
const REDMINE_ROOT = '/usr/share/redmine';
/** The prepared templates are kept with the project's other build caches (`npm ci` starts them afresh). */
const CACHE_DIR = path.resolve(HERE, '../../../node_modules/.cache/execution-worker-real-apps');
/** Rails boots in about 5 s here; a loaded 2-core machine can take much longer. */
const BOOT_TIMEOUT_MS = 150_000;

/** What the seed made (redmine-server.rb `prepare`): ids by name, the admin's API key. */
export interface RedmineFacts {
  /** Every seeded person's password. */
  password: string;
  adminApiKey: string;
  project: { id: number; identifier: string };
  /** By login: the user's id and full name. */
  users: Record<string, { id: number; name: string }>;
  trackers: Record<string, number>;
  customFields: Record<string, number>;
}

export interface RedmineHit {
  method: string;
  /** Path and query as requested. */
  uri: string;
}

export interface Redmine {
  /** The origin the browser uses: `http://{host}:{port}` (the host mapped to loopback by `hostRules`). */
  origin: string;
  host: string;
  port: number;
  /** `BROWSER_HOST_RULES` for the worker. */
  hostRules: string;
  facts: RedmineFacts;
  /** Every request Redmine served, in order (its access log). */
  hits: RedmineHit[];
  /** Redmine's REST API as the admin (over 127.0.0.1): the JSON of a GET. */
  get<T = Record<string, unknown>>(pathAndQuery: string): Promise<T>;
  /** Redmine's REST API as the admin: POST a JSON body, the JSON answered. */
  post<T = Record<string, unknown>>(path: string, body: unknown): Promise<T>;
  /** The bytes of a file Redmine serves to the admin (an attachment's download URL). */
  download(url: string): Promise<Buffer>;
  stop(): Promise<void>;
}

/** Why Redmine cannot run here, or undefined when it can. */
export function redmineMissing(): string | undefined {
  if (!existsSync(path.join(REDMINE_ROOT, 'config/environment.rb'))) return `Redmine is not installed (${REDMINE_ROOT}): apt-get install redmine redmine-sqlite (.ci/run does)`;
  return undefined;
}

export async function startRedmine(options: { host?: string } = {}): Promise<Redmine> {
  const missing = redmineMissing();
  if (missing) throw new Error(missing);
  const host = options.host ?? 'redmine.test';
  const template = await preparedTemplate();
  const dir = await newInstance(template.database);
  let app: AppProcess | undefined;
  try {
    app = spawnApp('redmine', 'ruby', [SERVER_SCRIPT, 'serve'], { cwd: dir, env: instanceEnv(dir) });
    const port = await app.waitForLine('listen', (line) => {
      const listening = /^listening (\d+)$/.exec(line);
      return listening ? Number(listening[1]) : undefined;
    }, BOOT_TIMEOUT_MS);
    const local = `http://127.0.0.1:${port}`;
    await awaitHttp(`${local}/login`, BOOT_TIMEOUT_MS, app);
    const server = app;
    const hits: RedmineHit[] = [];
    let read = 0;
    const refreshHits = () => {
      for (; read < server.lines.length; read++) {
        const hit = /^hit (\S+) (.*)$/.exec(server.lines[read]!);
        if (hit) hits.push({ method: hit[1]!, uri: hit[2]! });
      }
      return hits;
    };
    const auth = { 'X-Redmine-API-Key': template.facts.adminApiKey };
    return {
      origin: `http://${host}:${port}`,
      host,
      port,
      hostRules: `MAP ${host} 127.0.0.1`,
      facts: template.facts,
      get hits() {
        return refreshHits();
      },
      async get<T>(pathAndQuery: string): Promise<T> {
        const res = await fetch(`${local}${pathAndQuery}`, { headers: { ...auth, accept: 'application/json' } });
        if (!res.ok) throw new Error(`Redmine answered ${res.status} to GET ${pathAndQuery}: ${(await res.text()).slice(0, 300)}`);
        return (await res.json()) as T;
      },
      async post<T>(pathAndQuery: string, json: unknown): Promise<T> {
        const res = await fetch(`${local}${pathAndQuery}`, { method: 'POST', headers: { ...auth, accept: 'application/json', 'content-type': 'application/json' }, body: JSON.stringify(json) });
        if (!res.ok) throw new Error(`Redmine answered ${res.status} to POST ${pathAndQuery}: ${(await res.text()).slice(0, 300)}`);
        return (await res.json()) as T;
      },
      async download(url: string): Promise<Buffer> {
        const target = new URL(url);
        const res = await fetch(`${local}${target.pathname}${target.search}`, { headers: auth });
        if (!res.ok) throw new Error(`Redmine answered ${res.status} to GET ${target.pathname}`);
        return Buffer.from(await res.arrayBuffer());
      },
      stop: () => stopApp(server, dir),
    };
  } catch (error) {
    await stopApp(app, dir);
    throw error;
  }
}

/** Debian's tenant variable: a path under /usr/share/redmine/instances that reaches `dir`. */
function instanceEnv(dir: string): Record<string, string> {
  // More `..` than either /usr/share/redmine/instances or its link target /var/lib/redmine is
  // deep: both the kernel and Ruby's path joins stop at the root.
  return { REDMINE_INSTANCE: `${'../'.repeat(16)}${dir.replace(/^\/+/, '')}`, RAILS_ENV: 'production' };
}

/** A fresh instance folder with a copy of `database`. */
async function newInstance(database: string | undefined): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'redmine-'));
  for (const sub of ['config', 'files', 'log', 'tmp']) await mkdir(path.join(dir, sub), { recursive: true });
  const db = path.join(dir, 'db.sqlite3');
  // `timeout`: the web server's threads and a test's REST reads share one SQLite file.
  await writeFile(path.join(dir, 'config/database.yml'), `production:\n  adapter: sqlite3\n  database: ${JSON.stringify(db)}\n  timeout: 10000\n`);
  await writeFile(path.join(dir, 'config/secret_key.txt'), randomBytes(32).toString('hex'));
  if (database) await writeFile(db, await readFile(database));
  return dir;
}

/**
 * The seeded database, made once per machine and kept in the build cache under a key of the
 * seed script and Redmine's version: preparing it boots Rails and migrates (about 6 s here). Two
 * test files that prepare it at once both do the work; the first rename wins, the other copy
 * is dropped.
 */
async function preparedTemplate(): Promise<{ database: string; facts: RedmineFacts }> {
  const key = createHash('sha256').update(readFileSync(SERVER_SCRIPT)).update(redmineVersion()).digest('hex').slice(0, 16);
  const done = path.join(CACHE_DIR, `redmine-${key}`);
  const facts = path.join(done, 'facts.json');
  if (!existsSync(facts)) {
    await mkdir(CACHE_DIR, { recursive: true });
    const dir = await newInstance(undefined);
    try {
      const prepare = spawnApp('redmine prepare', 'ruby', [SERVER_SCRIPT, 'prepare', path.join(dir, 'facts.json')], { cwd: dir, env: instanceEnv(dir) });
      const { code } = await prepare.exited;
      if (code !== 0) throw new Error(`preparing Redmine's database failed (exit ${code}):\n${prepare.stderr().slice(-3000)}\n${prepare.lines.slice(-20).join('\n')}`);
      const staged = await mkdtemp(path.join(CACHE_DIR, 'staging-'));
      await writeFile(path.join(staged, 'db.sqlite3'), await readFile(path.join(dir, 'db.sqlite3')));
      await writeFile(path.join(staged, 'facts.json'), await readFile(path.join(dir, 'facts.json')));
      await rename(staged, done).catch(async (error: NodeJS.ErrnoException) => {
        await rm(staged, { recursive: true, force: true });
        if (!existsSync(facts)) throw error;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return { database: path.join(done, 'db.sqlite3'), facts: JSON.parse(await readFile(facts, 'utf8')) as RedmineFacts };
}

function redmineVersion(): string {
  const text = readFileSync(path.join(REDMINE_ROOT, 'lib/redmine/version.rb'), 'utf8');
  return ['MAJOR', 'MINOR', 'TINY'].map((part) => new RegExp(`${part}\\s*=\\s*(\\d+)`).exec(text)?.[1] ?? '?').join('.');
}
