// Checks the deployment files without a container engine (none runs on our machines): the
// Dockerfile's instructions and the paths it copies, the compose file's wiring, and the
// Kubernetes manifests' structure. Environment values are run through the real config schema,
// so a misspelt or invalid setting fails here rather than in a cluster.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, Secret } from 'kubernetes-models/v1';
import { parse, parseAllDocuments } from 'yaml';
import { main as cli } from '../../src/cli.js';
import { configSchema, loadConfig, requireDaemonSettings } from '../../src/config/schema.js';
import { dashboardDir } from '../../src/local-service/file-routes.js';
import { loadServeConfig, serveSettingsSchema } from '../../src/config/serve.js';
import { copiedTo, dockerIgnore, envOf, execForm, parseCopy, parseDockerfile, splitStages } from '../support/dockerfile.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOCKER_DIR = path.join(ROOT, 'docker');
const K8S_DIR = path.join(DOCKER_DIR, 'k8s');

/** Settings only `execution-worker serve` reads (src/config/serve.ts). */
const SERVE_ENV = new Set(Object.keys(serveSettingsSchema.shape));

/** The CLI's usage text, as `execution-worker help` prints it. */
async function cliUsage(): Promise<string> {
  let text = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    text += String(chunk);
    return true;
  });
  try {
    expect(await cli(['help'])).toBe(0);
  } finally {
    write.mockRestore();
  }
  return text;
}

/** Settings the worker reads that are not ours: the AWS SDK's credential chain. */
const FOREIGN_ENV = new Set(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION', 'NODE_ENV', 'HOME']);
const CONFIG_KEYS = new Set(Object.keys(configSchema.shape));

// Chromium's namespace sandbox, seen under strace as a non-root user: a seccomp profile that
// refuses any of these keeps the sandbox from starting.
const SANDBOX_SYSCALLS = ['clone', 'clone3', 'unshare', 'chroot', 'seccomp', 'prctl', 'capset', 'setsid', 'wait4'];

type Yaml = Record<string, unknown>;

const read = (file: string): string => readFileSync(file, 'utf8');
const asMap = (value: unknown, what: string): Yaml => {
  expect(value, `${what} is a mapping`).toBeTypeOf('object');
  expect(Array.isArray(value), `${what} is a mapping`).toBe(false);
  return value as Yaml;
};
const asList = (value: unknown, what: string): unknown[] => {
  expect(Array.isArray(value), `${what} is a list`).toBe(true);
  return value as unknown[];
};

// ---------------------------------------------------------------------------------------------
// Dockerfile

describe('Dockerfile', () => {
  const text = read(path.join(ROOT, 'Dockerfile'));
  const { stages } = splitStages(parseDockerfile(text));
  const final = stages.at(-1)!;
  const finalOf = (keyword: string) => final.instructions.filter((i) => i.keyword === keyword);
  const isIgnored = dockerIgnore(read(path.join(ROOT, '.dockerignore')));

  it('is multi-stage on one slim Node LTS Debian base', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage.base).toMatch(/^node:(22|24)-bookworm-slim$/);
    expect(final.base).toBe(stages[0]!.base);
    expect(stages[0]!.name).toBeDefined();
  });

  it('builds with npm ci, npm run build and prunes dev dependencies', () => {
    const build = stages[0]!.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args).join('\n');
    expect(build).toMatch(/npm ci\b/);
    expect(build).toMatch(/npm run build\b/);
    expect(build).toMatch(/npm prune --omit=dev\b/);
    // The build writes dist/ (the runtime copies it from there).
    const buildConfig = parse(read(path.join(ROOT, 'tsconfig.build.json'))) as { compilerOptions: { outDir: string } };
    expect(path.normalize(buildConfig.compilerOptions.outDir)).toBe('dist');
  });

  it("installs Debian's Chromium headless shell (not the full browser), ffmpeg, fonts, tini and CA certificates without recommends", () => {
    const run = finalOf('RUN').map((i) => i.args).join('\n');
    const install = /apt-get install ([^&;]*)/.exec(run)?.[1] ?? '';
    expect(install).toContain('--no-install-recommends');
    const packages = install.split(/\s+/).filter((w) => w !== '' && !w.startsWith('-'));
    expect(packages).toEqual(
      expect.arrayContaining(['chromium-headless-shell', 'ffmpeg', 'fonts-liberation', 'fonts-noto-color-emoji', 'tini', 'ca-certificates']),
    );
    expect(packages).not.toContain('chromium');
    expect(finalOf('ENV').map((i) => i.args).join('\n')).toMatch(/CHROMIUM_PATH=\/usr\/bin\/chromium-headless-shell/);
    expect(run).toMatch(/rm -rf \/var\/lib\/apt\/lists/);
  });

  it('runs as a non-root user with a home directory', () => {
    const users = finalOf('USER');
    expect(users.length).toBeGreaterThan(0);
    const user = users.at(-1)!.args.split(':')[0]!;
    expect(['root', '0']).not.toContain(user);
    const run = finalOf('RUN').map((i) => i.args).join('\n');
    if (!/^\d+$/.test(user)) expect(run).toMatch(new RegExp(`useradd\\b[^\\n]*--create-home[^\\n]*\\b${user}\\b`));
    // Instructions after USER run unprivileged: apt-get must come before it.
    const userIndex = final.instructions.indexOf(users.at(-1)!);
    const aptIndex = final.instructions.findIndex((i) => i.keyword === 'RUN' && i.args.includes('apt-get'));
    expect(aptIndex).toBeLessThan(userIndex);
  });

  it('sets the runtime environment', () => {
    const env = envOf(final);
    expect(env.get('CHROMIUM_PATH')).toBe('/usr/bin/chromium-headless-shell');
    expect(env.get('FFMPEG_PATH')).toBe('/usr/bin/ffmpeg');
    expect(env.get('HEALTH_PORT')).toBe('9090');
    expect(env.get('NODE_ENV')).toBe('production');
    const settings = Object.fromEntries([...env].filter(([k]) => CONFIG_KEYS.has(k)));
    expect(() => loadConfig(settings)).not.toThrow();
  });

  it('starts node under tini in exec form, stops with SIGTERM and checks /healthz', () => {
    const entrypoint = execForm(finalOf('ENTRYPOINT').at(-1)?.args ?? '');
    expect(entrypoint).toEqual(['/usr/bin/tini', '--']);
    expect(execForm(finalOf('CMD').at(-1)?.args ?? '')).toEqual(['node', 'dist/main.js']);
    expect(finalOf('STOPSIGNAL').at(-1)?.args).toBe('SIGTERM');
    const healthcheck = finalOf('HEALTHCHECK').at(-1)?.args ?? '';
    const command = execForm(healthcheck.slice(healthcheck.indexOf('CMD') + 3).trim());
    expect(command?.[0]).toBe('node');
    expect(command?.join(' ')).toContain('/healthz');
    expect(command?.join(' ')).toContain('HEALTH_PORT');
  });

  it('copies only paths that exist and are not excluded from the build context', () => {
    const copies = stages.flatMap((stage) =>
      stage.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD').map((i) => ({ stage, ins: i })),
    );
    expect(copies.length).toBeGreaterThan(0);
    for (const { ins } of copies) {
      expect(ins.keyword, `line ${ins.line}: COPY, not ADD`).toBe('COPY');
      const copy = parseCopy(ins.args);
      if (copy.from !== undefined) continue;
      for (const source of copy.sources) {
        expect(existsSync(path.join(ROOT, source)), `line ${ins.line}: ${source} exists in the repository`).toBe(true);
        expect(isIgnored(path.posix.normalize(source)), `line ${ins.line}: ${source} is not in .dockerignore`).toBe(false);
      }
    }
  });

  it('copies from the build stage only what the build stage has', () => {
    const build = stages[0]!;
    const workdir = build.instructions.filter((i) => i.keyword === 'WORKDIR').at(-1)!.args;
    // What the build stage holds, relative to its WORKDIR: its own copies plus what npm makes.
    const held = new Set(['dist', 'node_modules']);
    for (const ins of build.instructions.filter((i) => i.keyword === 'COPY')) {
      const copy = parseCopy(ins.args);
      for (const source of copy.sources) held.add(copiedTo(source, copy.dest));
    }
    const fromBuild = final.instructions.filter((i) => i.keyword === 'COPY').map((i) => parseCopy(i.args)).filter((c) => c.from !== undefined);
    expect(fromBuild.length).toBeGreaterThan(0);
    for (const copy of fromBuild) {
      expect(copy.from).toBe(build.name);
      for (const source of copy.sources) {
        const rel = path.posix.relative(workdir, source);
        const top = [...held].some((h) => rel === h || rel.startsWith(`${h}/`));
        expect(top, `${source} is made or copied by the build stage`).toBe(true);
      }
    }
  });

  it('ships the runtime files: dist, bin, node_modules, package.json and the dashboard where the local API reads it', () => {
    const workdir = final.instructions.filter((i) => i.keyword === 'WORKDIR').at(-1)!.args;
    const dests = final.instructions
      .filter((i) => i.keyword === 'COPY')
      .map((i) => path.posix.normalize(path.posix.join(workdir, parseCopy(i.args).dest)));
    // The dashboard sits where the local API looks for it, relative to the package root.
    const dashboard = path.relative(ROOT, dashboardDir()).split(path.sep).join('/');
    for (const needed of ['dist', 'bin', 'node_modules', 'package.json', dashboard]) {
      expect(dests, needed).toContain(path.posix.join(workdir, needed));
    }
  });
});

// ---------------------------------------------------------------------------------------------
// docker/compose.yaml

/**
 * Compose interpolation with an empty host environment: `${X:-d}` → d, `${X}` → '', `$$` → `$`;
 * a required `${X:?message}` reads as `set-X`, the value a user would have set.
 */
function interpolate(value: unknown): string {
  return String(value)
    .replace(/\$\$/g, '\u0000')
    .replace(/\$\{(\w+)(?::?([-?])([^}]*))?\}/g, (_, name: string, how: string | undefined, fallback: string | undefined) => (how === '?' ? `set-${name}` : (fallback ?? '')))
    .replace(/\u0000/g, '$');
}

function environmentOf(service: Yaml): Record<string, string> {
  const raw = service.environment;
  if (raw === undefined) return {};
  if (Array.isArray(raw)) {
    return Object.fromEntries(
      raw.map((entry) => {
        const text = String(entry);
        const eq = text.indexOf('=');
        return [text.slice(0, eq), interpolate(text.slice(eq + 1))];
      }),
    );
  }
  return Object.fromEntries(Object.entries(asMap(raw, 'environment')).map(([k, v]) => [k, interpolate(v ?? '')]));
}

/** Compose durations: `90s`, `1m30s`, `2m`, `500ms`. */
function durationMs(value: unknown): number {
  const text = String(value);
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  let total = 0;
  let rest = text;
  for (const match of text.matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)) {
    total += Number(match[1]) * units[match[2]!]!;
    rest = rest.replace(match[0], '');
  }
  expect(rest, `duration ${text}`).toBe('');
  return total;
}

/** Compose byte sizes: `1gb`, `512m`, `65536`. */
function byteSize(value: unknown): number {
  const match = /^(\d+)\s*([kmg]?)b?$/i.exec(String(value));
  expect(match, `size ${String(value)}`).not.toBeNull();
  return Number(match![1]) * 1024 ** ' kmg'.indexOf((match![2] || ' ').toLowerCase());
}

function healthcheckCommand(service: Yaml): string {
  const healthcheck = asMap(service.healthcheck, 'healthcheck');
  const test = asList(healthcheck.test, 'healthcheck.test').map(String);
  expect(['CMD', 'CMD-SHELL']).toContain(test[0]);
  return test.slice(1).join(' ');
}

describe('docker/compose.yaml', () => {
  const composeFile = path.join(DOCKER_DIR, 'compose.yaml');
  const compose = asMap(parse(read(composeFile), { merge: true }), 'compose file');
  const services = asMap(compose.services, 'services');
  const service = (name: string) => asMap(services[name], `service ${name}`);

  it('has Redis, MinIO with its bucket job, the local API and the worker', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['redis', 'minio', 'minio-init', 'api', 'worker']));
  });

  it('runs Redis with AOF persistence, noeviction and a volume', () => {
    const redis = service('redis');
    expect(String(redis.image)).toMatch(/^redis:7/);
    const command = asList(redis.command, 'redis command').map(String).join(' ');
    expect(command).toMatch(/--appendonly yes/);
    expect(command).toMatch(/--maxmemory-policy noeviction/);
    expect(asList(redis.volumes, 'redis volumes').some((v) => String(v).endsWith(':/data'))).toBe(true);
    expect(healthcheckCommand(redis)).toContain('ping');
  });

  it('creates the workers\' bucket with minio/mc once MinIO is healthy', () => {
    const init = service('minio-init');
    expect(String(init.image)).toMatch(/^minio\/mc[:@]/);
    expect(asMap(asMap(init.depends_on, 'depends_on').minio, 'minio dependency').condition).toBe('service_healthy');
    const script = [init.entrypoint, init.command].flat().map(interpolate).join('\n');
    expect(script).toMatch(/mc alias set \w+ http:\/\/minio:9000 "\$MINIO_ROOT_USER" "\$MINIO_ROOT_PASSWORD"/);
    expect(script).toMatch(/mc mb --ignore-existing "\w+\/\$S3_BUCKET"/);
    expect(environmentOf(init).S3_BUCKET).toBe(environmentOf(service('worker')).S3_BUCKET);
    expect(environmentOf(init).MINIO_ROOT_USER).toBe(environmentOf(service('minio')).MINIO_ROOT_USER);
  });

  it('runs two workers built from the repository\'s Dockerfile', () => {
    const worker = service('worker');
    expect(asMap(worker.deploy, 'deploy').replicas).toBe(2);
    const build = asMap(worker.build, 'build');
    const context = path.resolve(DOCKER_DIR, String(build.context));
    expect(existsSync(path.join(context, String(build.dockerfile ?? 'Dockerfile')))).toBe(true);
    expect(context).toBe(ROOT);
    expect(service('api').image).toBe(worker.image);
  });

  it('wires the worker to Redis, MinIO, the API and Anthropic by environment', () => {
    const worker = environmentOf(service('worker'));
    const api = environmentOf(service('api'));
    const minio = environmentOf(service('minio'));

    for (const key of Object.keys(worker)) {
      expect(CONFIG_KEYS.has(key) || FOREIGN_ENV.has(key), `${key} is a setting the worker reads`).toBe(true);
    }
    const config = loadConfig(worker);
    expect(() => requireDaemonSettings(config)).not.toThrow();

    // One queue on one Redis, seen the same way by the producer and the consumers.
    for (const key of ['REDIS_URL', 'EXECUTION_QUEUE', 'QUEUE_PREFIX'] as const) expect(api[key], key).toBe(worker[key]);
    expect(Object.keys(services)).toContain(new URL(config.REDIS_URL).hostname);

    // The API the workers report to is the api service, with a key it accepts.
    const apiUrl = new URL(config.API_BASE_URL!);
    expect(apiUrl.hostname).toBe('api');
    const serve = loadServeConfig(api);
    expect(apiUrl.port).toBe(String(serve.PORT));
    expect(serve.API_KEYS).toContain(config.API_KEY);
    // The API answers for the name the workers reach it by (any other Host is refused).
    expect(serve.PUBLIC_HOSTS.some((h) => h.hostname === apiUrl.hostname && (h.port === undefined || String(h.port) === apiUrl.port))).toBe(true);

    // Artifacts go to MinIO with its credentials, path-style.
    expect(new URL(config.S3_ENDPOINT!).host).toBe('minio:9000');
    expect(config.S3_FORCE_PATH_STYLE).toBe(true);
    expect(config.S3_BUCKET).toBeTruthy();
    expect(worker.AWS_ACCESS_KEY_ID).toBe(minio.MINIO_ROOT_USER);
    expect(worker.AWS_SECRET_ACCESS_KEY).toBe(minio.MINIO_ROOT_PASSWORD);

    // The Anthropic key comes from the host, never from the file.
    const raw = asMap(service('worker').environment, 'worker environment');
    expect(String(raw.ANTHROPIC_API_KEY)).toMatch(/^\$\{ANTHROPIC_API_KEY(:?-)?\}$/);
    // Profiles' keys likewise, from docker/.env (gen-env.sh writes them): never a default in the file.
    expect(String(raw.PROFILE_KEYS)).toMatch(/^\$\{PROFILE_KEYS(:?-)?\}$/);
  });

  it('runs, in the image it builds, commands the image ships', async () => {
    const dockerfile = splitStages(parseDockerfile(read(path.join(ROOT, 'Dockerfile')))).stages.at(-1)!;
    const shipped = dockerfile.instructions.filter((i) => i.keyword === 'COPY').map((i) => path.posix.normalize(parseCopy(i.args).dest));
    const imageCmd = execForm(dockerfile.instructions.filter((i) => i.keyword === 'CMD').at(-1)!.args);
    const usage = await cliUsage();
    const ours = Object.entries(services).filter(([, definition]) => asMap(definition, 'service').build !== undefined);
    expect(ours.map(([name]) => name).sort()).toEqual(['api', 'worker']);
    for (const [name, definition] of ours) {
      const command = asList(asMap(definition, name).command ?? imageCmd, `${name} command`).map(String);
      // node runs a script the image copies: bin/ as is, dist/ compiled from src/.
      expect(command[0], name).toBe('node');
      const script = command[1]!;
      expect(shipped.some((dest) => script.startsWith(`${dest}/`)), `${name}: ${script} is under a folder the image copies`).toBe(true);
      const source = script.startsWith('dist/') ? script.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts') : script;
      expect(existsSync(path.join(ROOT, source)), `${name}: ${source} exists`).toBe(true);
      // A CLI subcommand is one the CLI lists.
      if (script === 'bin/execution-worker.js') expect(usage, `${name}: execution-worker ${command[2]}`).toMatch(new RegExp(`execution-worker ${command[2]}\\b`));
    }
    // The worker service runs the image's default command.
    expect(service('worker').command).toEqual(imageCmd);
    // Every other image is pinned to a tag (scripts/image-smoke.ts runs the two above for real).
    for (const [name, definition] of Object.entries(services).filter(([, d]) => asMap(d, 'service').build === undefined)) {
      expect(String(asMap(definition, name).image), name).toMatch(/^[\w./-]+:(?!latest$)[\w.-]+$/);
    }
  });

  it('gives the local API only settings it reads', () => {
    for (const key of Object.keys(environmentOf(service('api')))) {
      expect(CONFIG_KEYS.has(key) || SERVE_ENV.has(key), `${key} is a setting \`serve\` reads`).toBe(true);
    }
    expect(() => loadServeConfig(environmentOf(service('api')))).not.toThrow();
  });

  it('runs the local API with its keys, port and a healthcheck', () => {
    const api = service('api');
    expect(asList(api.command, 'api command').map(String)).toEqual(['node', 'bin/execution-worker.js', 'serve']);
    const env = environmentOf(api);
    expect(asList(api.ports, 'api ports').map(interpolate)).toContain(`127.0.0.1:${env.PORT}:${env.PORT}`);
    expect(env.API_KEYS).toBeTruthy();
    expect(healthcheckCommand(api)).toContain(`127.0.0.1:${env.PORT}/healthz`);
  });

  // A compose file once published the API with a default key on every interface, and MinIO with
  // minioadmin credentials and an anonymous policy that listed the bucket: never again.
  it('publishes every port on 127.0.0.1 only, unless BIND_ADDRESS opens it', () => {
    const published = Object.entries(services).flatMap(([name, d]) => (asMap(d, name).ports === undefined ? [] : asList(asMap(d, name).ports, `${name} ports`).map((p) => [name, String(p)] as const)));
    expect(published.map(([name]) => name).sort()).toEqual(['api', 'jaeger', 'minio', 'minio']);
    for (const [name, port] of published) {
      expect(port, name).toMatch(/^\$\{BIND_ADDRESS:-127\.0\.0\.1\}:\d+:\d+$/);
      expect(interpolate(port), name).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it('has a tracing backend only under the tracing profile, and exports nothing unless told to', () => {
    const jaeger = service('jaeger');
    expect(jaeger.profiles).toEqual(['tracing']);
    expect(String(jaeger.image)).toMatch(/^jaegertracing\/jaeger:2\./);
    for (const name of ['api', 'worker']) {
      const env = asMap(service(name).environment, `${name} environment`);
      // Unset by default (an empty variable is "use the default"): no endpoint, no traces.
      expect(interpolate(String(env.OTEL_EXPORTER_OTLP_ENDPOINT)), name).toBe('');
      expect(String(env.OTEL_EXPORTER_OTLP_ENDPOINT), name).toBe('${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
    }
  });

  it('has no default key or password: compose refuses to start without them', () => {
    const text = read(composeFile);
    expect(text).not.toMatch(/dev-api-key|minioadmin/);
    const raw = (name: string) => asMap(service(name).environment, `${name} environment`);
    const secrets = [raw('api').API_KEYS, raw('worker').API_KEY, raw('minio').MINIO_ROOT_USER, raw('minio').MINIO_ROOT_PASSWORD, raw('minio-init').MINIO_ROOT_PASSWORD, raw('worker').AWS_ACCESS_KEY_ID, raw('worker').AWS_SECRET_ACCESS_KEY];
    for (const value of secrets) expect(String(value)).toMatch(/^\$\{\w+:\?[^}]+\}$/);
    // The script that writes them draws them from the kernel's generator and keeps them private.
    const gen = read(path.join(DOCKER_DIR, 'gen-env.sh'));
    expect(gen).toMatch(/\/dev\/urandom/);
    expect(gen).toMatch(/umask 077/);
    for (const name of ['API_KEY', 'MINIO_ROOT_USER', 'MINIO_ROOT_PASSWORD', 'PROFILE_KEYS']) expect(gen).toContain(`${name}=`);
  });

  it('lets nothing anonymous list the bucket or write to it', () => {
    const script = [service('minio-init').entrypoint, service('minio-init').command].flat().map(interpolate).join('\n');
    expect(script).not.toMatch(/mc anonymous set (download|public|upload)/);
    const policy = /(\{"Version".*\})\s*$/m.exec(script);
    expect(policy).not.toBeNull();
    const statements = asList(asMap(JSON.parse(policy![1]!), 'policy').Statement, 'statements').map((st) => asMap(st, 'statement'));
    for (const statement of statements) {
      expect(asList(statement.Action, 'actions')).toEqual(['s3:GetObject']);
      for (const resource of asList(statement.Resource, 'resources').map(String)) expect(resource).toMatch(/^arn:aws:s3:::\$S3_BUCKET\/executions\/\*$/);
    }
  });

  it('checks the worker\'s /healthz and gives it longer than SHUTDOWN_GRACE_MS to stop', () => {
    const worker = service('worker');
    const config = loadConfig(environmentOf(worker));
    expect(config.HEALTH_PORT).toBeGreaterThan(0);
    expect(healthcheckCommand(worker)).toContain(`127.0.0.1:${config.HEALTH_PORT}/healthz`);
    expect(worker.stop_signal ?? 'SIGTERM').toBe('SIGTERM');
    expect(durationMs(worker.stop_grace_period)).toBeGreaterThan(config.SHUTDOWN_GRACE_MS);
  });

  it('starts services in order, waiting on health and on the bucket job', () => {
    for (const [name, definition] of Object.entries(services)) {
      const dependsOn = asMap(definition, name).depends_on;
      if (dependsOn === undefined) continue;
      for (const [dependency, how] of Object.entries(asMap(dependsOn, `${name}.depends_on`))) {
        const condition = asMap(how, `${name} → ${dependency}`).condition;
        expect(['service_healthy', 'service_completed_successfully']).toContain(condition);
        if (condition === 'service_healthy') expect(service(dependency).healthcheck, `${dependency} has a healthcheck`).toBeDefined();
      }
    }
    expect(asMap(service('worker').depends_on, 'worker.depends_on')).toMatchObject({
      redis: { condition: 'service_healthy' },
      'minio-init': { condition: 'service_completed_successfully' },
      api: { condition: 'service_healthy' },
    });
  });

  it('keeps Chromium\'s sandbox on with a seccomp profile that allows it', () => {
    const worker = service('worker');
    const opts = asList(worker.security_opt, 'security_opt').map(String);
    const seccomp = opts.find((o) => /^seccomp[=:]/.test(o));
    expect(seccomp).toBeDefined();
    // docker compose resolves the profile against the compose file's directory.
    const profile = asMap(JSON.parse(read(path.resolve(DOCKER_DIR, seccomp!.slice('seccomp='.length)))), 'seccomp profile');
    expect(profile.defaultAction).toBe('SCMP_ACT_ALLOW');
    const denied = asList(profile.syscalls, 'syscalls').flatMap((rule) => {
      const r = asMap(rule, 'rule');
      return r.action === 'SCMP_ACT_ALLOW' ? [] : asList(r.names, 'names').map(String);
    });
    expect(denied).toEqual(expect.arrayContaining(['mount', 'bpf', 'kexec_load', 'init_module']));
    for (const syscall of SANDBOX_SYSCALLS) expect(denied, `${syscall} stays allowed`).not.toContain(syscall);
    expect(asList(profile.archMap, 'archMap').length).toBeGreaterThan(0);
    expect(worker.privileged ?? false).toBe(false);
    // Docker's default /dev/shm is 64 MB, too small for Chromium.
    expect(byteSize(worker.shm_size)).toBeGreaterThan(64 * 2 ** 20);
  });
});

// ---------------------------------------------------------------------------------------------
// docker/k8s/*.yaml

interface Manifest {
  readonly file: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { name: string; labels?: Record<string, string> };
  readonly [key: string]: unknown;
}

function loadManifests(): Manifest[] {
  const files = readdirSync(K8S_DIR).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
  return files.flatMap((file) =>
    parseAllDocuments(read(path.join(K8S_DIR, file))).flatMap((doc) => {
      expect(doc.errors, `${file} parses`).toEqual([]);
      const value = doc.toJS() as Manifest | null;
      return value === null ? [] : [{ ...value, file }];
    }),
  );
}

/** The schema of each kind the manifests use: kubernetes-models and @kubernetes-models/keda. */
const K8S_MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1 ConfigMap': ConfigMap,
  'v1 Secret': Secret,
  'apps/v1 Deployment': Deployment,
  'keda.sh/v1alpha1 ScaledObject': ScaledObject,
  'keda.sh/v1alpha1 TriggerAuthentication': TriggerAuthentication,
};

/** Kubernetes quantities: `500m`, `1`, `600Mi`, `1Gi`, `512M`. */
function quantity(value: unknown): number {
  const match = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(value));
  expect(match, `quantity ${String(value)}`).not.toBeNull();
  const factor: Record<string, number> = { m: 0.001, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(match![1]) * (match![2] ? factor[match![2]]! : 1);
}

describe('docker/k8s', () => {
  const manifests = loadManifests();
  const ofKind = (kind: string) => manifests.filter((m) => m.kind === kind);
  const one = (kind: string) => {
    const found = ofKind(kind);
    expect(found, kind).toHaveLength(1);
    return found[0]!;
  };
  const deployment = one('Deployment');
  const configMap = one('ConfigMap');
  const secret = one('Secret');
  const settings = asMap(configMap.data, 'ConfigMap data') as Record<string, string>;
  const secrets = asMap(secret.stringData, 'Secret stringData') as Record<string, string>;
  const config = loadConfig({ ...settings, ...secrets });
  const podSpec = asMap(asMap(asMap(deployment.spec, 'spec').template, 'template').spec, 'pod spec');
  const containers = asList(podSpec.containers, 'containers').map((c) => asMap(c, 'container'));
  const worker = containers[0]!;

  it('has a kind, an apiVersion and a name on every document, and a kustomization listing real files', () => {
    expect(manifests.length).toBeGreaterThanOrEqual(5);
    for (const m of manifests) {
      expect(m.apiVersion, m.file).toMatch(/^[\w.]+(\/v\w+)?$/);
      expect(m.metadata?.name, m.file).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    }
    const kustomization = asMap(parse(read(path.join(K8S_DIR, 'kustomization.yaml'))), 'kustomization');
    for (const resource of asList(kustomization.resources, 'resources')) {
      expect(statSync(path.join(K8S_DIR, String(resource))).isFile(), String(resource)).toBe(true);
    }
    // Placeholder credentials are never applied by `kubectl apply -k`.
    expect(asList(kustomization.resources, 'resources')).not.toContain(secret.file);
  });

  it('configures the workers with settings the schema accepts', () => {
    for (const key of [...Object.keys(settings), ...Object.keys(secrets)]) {
      expect(CONFIG_KEYS.has(key) || FOREIGN_ENV.has(key) || key === 'REDIS_PASSWORD', `${key} is a known setting`).toBe(true);
    }
    expect(() => requireDaemonSettings(config)).not.toThrow();
    const envFrom = asList(worker.envFrom, 'envFrom').map((e) => asMap(e, 'envFrom entry'));
    expect(envFrom).toEqual(
      expect.arrayContaining([
        { configMapRef: { name: configMap.metadata.name } },
        { secretRef: { name: secret.metadata.name } },
      ]),
    );
  });

  it('probes /readyz for readiness and /healthz for liveness on HEALTH_PORT', () => {
    const ports = asList(worker.ports, 'ports').map((p) => asMap(p, 'port'));
    const portNumber = (port: unknown) => (typeof port === 'number' ? port : ports.find((p) => p.name === port)?.containerPort);
    expect(config.HEALTH_PORT).toBeGreaterThan(0);
    const probe = (name: string) => asMap(asMap(worker[name], name).httpGet, `${name}.httpGet`);
    expect(probe('readinessProbe').path).toBe('/readyz');
    expect(probe('livenessProbe').path).toBe('/healthz');
    for (const name of ['readinessProbe', 'livenessProbe']) expect(portNumber(probe(name).port), name).toBe(config.HEALTH_PORT);
  });

  it('lets running executions finish before the pod is killed', () => {
    const grace = podSpec.terminationGracePeriodSeconds;
    expect(grace).toBeTypeOf('number');
    expect(grace as number).toBeGreaterThan((config.EXECUTION_TIMEOUT_MS + config.SHUTDOWN_GRACE_MS) / 1000);
    const image = worker.command === undefined ? [] : asList(worker.command, 'command').map(String);
    if (image.length > 0) expect(image[0]).toBe('/usr/bin/tini');
  });

  it('requests resources for WORKER_CONCURRENCY executions at ~250 MB and ~0.5 CPU each', () => {
    const resources = asMap(worker.resources, 'resources');
    const requests = asMap(resources.requests, 'requests');
    const limits = asMap(resources.limits, 'limits');
    expect(quantity(requests.cpu)).toBeGreaterThanOrEqual(0.5 * config.WORKER_CONCURRENCY);
    expect(quantity(requests.memory)).toBeGreaterThanOrEqual(250 * 2 ** 20 * config.WORKER_CONCURRENCY);
    expect(quantity(limits.memory)).toBeGreaterThanOrEqual(quantity(requests.memory));
  });

  it('runs as the image\'s non-root user with the sandbox-friendly seccomp profile and no extra privilege', () => {
    const pod = asMap(podSpec.securityContext, 'pod securityContext');
    expect(pod.runAsNonRoot).toBe(true);
    expect(pod.runAsUser).toBe(10001);
    expect(read(path.join(ROOT, 'Dockerfile'))).toMatch(/useradd[^\n]*--uid 10001/);
    expect(asMap(pod.seccompProfile, 'seccompProfile').type).toBe('Localhost');
    const container = asMap(worker.securityContext, 'container securityContext');
    expect(container.allowPrivilegeEscalation).toBe(false);
    expect(container.privileged ?? false).toBe(false);
    const mounts = asList(worker.volumeMounts, 'volumeMounts').map((m) => asMap(m, 'mount'));
    expect(mounts.map((m) => m.mountPath)).toEqual(expect.arrayContaining(['/dev/shm', '/tmp']));
  });

  it('selects its own pods', () => {
    const spec = asMap(deployment.spec, 'spec');
    const selector = asMap(asMap(spec.selector, 'selector').matchLabels, 'matchLabels');
    const labels = asMap(asMap(asMap(spec.template, 'template').metadata, 'template metadata').labels, 'labels');
    expect(labels).toMatchObject(selector);
    // KEDA owns the replica count.
    expect(spec.replicas).toBeUndefined();
  });

  it('scales the Deployment on the BullMQ wait and active lists', () => {
    const scaled = one('ScaledObject');
    const spec = asMap(scaled.spec, 'ScaledObject spec');
    const target = asMap(spec.scaleTargetRef, 'scaleTargetRef');
    expect(target.name).toBe(deployment.metadata.name);
    expect(target.kind ?? 'Deployment').toBe('Deployment');

    const triggers = asList(spec.triggers, 'triggers').map((t) => asMap(t, 'trigger'));
    const listNames = triggers.map((t) => {
      expect(t.type).toMatch(/^redis(-cluster)?$/);
      return asMap(t.metadata, 'trigger metadata').listName;
    });
    const prefix = `${config.QUEUE_PREFIX}:${config.EXECUTION_QUEUE}`;
    expect(listNames).toEqual(expect.arrayContaining([`${prefix}:wait`, `${prefix}:active`]));

    // The HPA takes the larger of independent triggers; the replica count must follow their sum.
    const modifiers = asMap(asMap(spec.advanced, 'advanced').scalingModifiers, 'scalingModifiers');
    const names = triggers.map((t) => String(t.name));
    expect(String(modifiers.formula).replace(/\s/g, '')).toBe(names.join('+'));
    expect(Number(modifiers.target)).toBe(config.WORKER_CONCURRENCY);

    // Each trigger authenticates with a password the Secret holds.
    const auths = ofKind('TriggerAuthentication');
    for (const trigger of triggers) {
      const auth = auths.find((a) => a.metadata.name === asMap(trigger.authenticationRef, 'authenticationRef').name);
      expect(auth, 'TriggerAuthentication').toBeDefined();
      for (const ref of asList(asMap(auth!.spec, 'spec').secretTargetRef, 'secretTargetRef').map((r) => asMap(r, 'ref'))) {
        expect(ref.name).toBe(secret.metadata.name);
        expect(Object.keys(secrets)).toContain(ref.key);
      }
    }
  });

  it('validates against the Kubernetes and KEDA schemas of kubernetes-models', () => {
    for (const manifest of manifests) {
      const model = K8S_MODELS[`${manifest.apiVersion} ${manifest.kind}`];
      expect(model, `${manifest.file}: a schema for ${manifest.apiVersion} ${manifest.kind}`).toBeDefined();
      const { file: _file, ...document } = manifest;
      expect(() => new model!(document as never).validate(), `${manifest.file} (${manifest.kind})`).not.toThrow();
    }
    // The schemas check types, required fields and enums (not unknown fields): a wrong type fails.
    const broken = structuredClone(deployment) as unknown as { spec: { template: { spec: { containers: Array<{ ports: Array<{ containerPort: unknown }> }> } } } };
    broken.spec.template.spec.containers[0]!.ports[0]!.containerPort = 'http';
    const { file: _file, ...document } = broken as unknown as Manifest;
    expect(() => new Deployment(document as never).validate()).toThrow(/containerPort must be integer/);
  });

  it('documents Redis for production', () => {
    const readme = read(path.join(K8S_DIR, 'README.md'));
    expect(readme).toMatch(/appendonly/i);
    expect(readme).toMatch(/noeviction/);
    // Sentinel for fail-over; Redis Cluster is refused at start, so no hash-tag advice for it.
    expect(readme).toMatch(/redis\+sentinel:\/\//);
    expect(readme).not.toMatch(/QUEUE_PREFIX=\{bull\}/);
  });
});

describe('every deployment file', () => {
  it('leaves Chromium\'s sandbox on', () => {
    const files = [
      path.join(ROOT, 'Dockerfile'),
      path.join(DOCKER_DIR, 'compose.yaml'),
      ...readdirSync(K8S_DIR).filter((f) => f.endsWith('.yaml')).map((f) => path.join(K8S_DIR, f)),
    ];
    for (const file of files) {
      const code = read(file)
        .split('\n')
        .filter((l) => !l.trim().startsWith('#'))
        .join('\n');
      expect(code, path.relative(ROOT, file)).not.toMatch(/--no-sandbox|seccomp[=:]unconfined|privileged:\s*true/);
    }
  });
});
