// Keeps docs/ honest where a machine can tell: every setting, error code, log event, metric,
// specification field and model family the code knows is documented, and no link of the docs
// (or of the README) leaves the repository or points at a file or heading that does not exist.
// Users clone the repository alone: a link to a sibling folder or a web page is a dead end.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configSchema, loadConfig } from '../../src/config/schema.js';
import { loadServeConfig, serveSettingsSchema } from '../../src/config/serve.js';
import { ERROR_CODES } from '../../src/contract/errors.js';
import { SPECIFICATION_FIELDS } from '../../src/contract/specification.js';
import { PRICE_TABLE } from '../../src/model/prices.js';
import { MODEL_TABLE, chooseActionSpace, modelTools } from '../../src/model/tool-versions.js';
import { ARTIFACT_FILES } from '../../src/runner/artifacts.js';
import { STEPS_FOLDER } from '../../src/runner/step-screenshots.js';
import { createMetrics } from '../../src/telemetry/metrics.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOCS = path.join(ROOT, 'docs');

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const docsFiles = () =>
  readdirSync(DOCS, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join('docs', name));

/** Names that a page must show in backticks, and which of them it does not. */
function undocumented(file: string, names: readonly string[]): string[] {
  const text = read(file);
  return names.filter((name) => !text.includes(`\`${name}\``));
}

/** The text outside fenced code blocks and inline code spans, where links live. */
function prose(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/(`+)[\s\S]*?\1/g, '');
}

/** Every link target of a Markdown file: inline links, reference definitions, autolinks, href, bare web addresses. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const targets: string[] = [];
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(m[1]!);
  for (const m of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) targets.push(m[1]!);
  for (const m of text.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]*)>/gi)) targets.push(m[1]!);
  for (const m of text.matchAll(/href\s*=\s*["']([^"']+)["']/gi)) targets.push(m[1]!);
  // GitHub turns a bare web address into a link too.
  for (const m of text.matchAll(/(?<![(<"'])\bhttps?:\/\/[^\s)>\]]+/gi)) targets.push(m[0]);
  return targets;
}

/** GitHub's anchor of each heading of a Markdown file (duplicates get `-1`, `-2`, …). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  // An explicit anchor (`<a id="frames"></a>`) names a place inside a section.
  for (const m of withoutFences.matchAll(/<a\s+id="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

/** What is wrong with each link of `file` (relative to the repository root): empty when nothing. */
function linkFaults(file: string): string[] {
  const faults: string[] = [];
  const from = path.dirname(path.join(ROOT, file));
  for (const target of linkTargets(read(file))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) {
      faults.push(`${file}: ${target} leaves the repository`);
      continue;
    }
    const [pathPart = '', fragment] = target.split('#', 2);
    const resolved = pathPart === '' ? path.join(ROOT, file) : path.resolve(from, decodeURIComponent(pathPart.split('?')[0]!));
    if (resolved !== ROOT && !resolved.startsWith(ROOT + path.sep)) {
      faults.push(`${file}: ${target} points outside the repository`);
      continue;
    }
    if (!existsSync(resolved)) {
      faults.push(`${file}: ${target} points to a file that does not exist`);
      continue;
    }
    if (fragment !== undefined && resolved.endsWith('.md') && statSync(resolved).isFile() && !anchors(readFileSync(resolved, 'utf8')).has(fragment)) {
      faults.push(`${file}: ${target} names a heading that does not exist`);
    }
  }
  return faults;
}

/** What `execution-worker serve` reads besides the worker's settings (src/config/serve.ts). */
const LOCAL_API_VARIABLES = Object.keys(serveSettingsSchema.shape);
/** The schema's parse of `env` with each variable `serve` requires set. */
const SERVE_REQUIRED = { API_KEYS: 'docs-test-key' };
/** Pages with a table of settings: `| \`NAME\` | default | … |`. */
const CONFIG_TABLES = ['docs/configuration.md', 'docs/queue-and-jobs.md', 'docs/guide.md'];
/** Defaults made from the machine (a folder), which the docs describe in words. */
const COMPUTED_DEFAULTS = new Set(['ARTIFACTS_DIR', 'WORK_DIR']);

/**
 * The rows of a page's settings tables: `| \`NAME\` | default | range … |` (configuration.md)
 * or `| \`NAME\` | default | meaning |` (the guide, which has no range column).
 */
function configRows(file: string): Array<{ name: string; defaultCell: string; rangeCell?: string }> {
  const rows: Array<{ name: string; defaultCell: string; rangeCell?: string }> = [];
  const withRange = file === 'docs/configuration.md';
  for (const m of read(file).matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|([^|\n]*)\|([^|\n]*)\|/gm)) {
    rows.push({ name: m[1]!, defaultCell: m[2]!.trim(), ...(withRange ? { rangeCell: m[3]!.trim() } : {}) });
  }
  return rows;
}

/** Words that would send a reader to a file the repository does not have. */
const OUTSIDE_REFERENCES = /\.\.\/shared|CONTRACT\.md|seed\/0/;

describe('docs/', () => {
  it('has an index and the pages it lists', () => {
    expect(existsSync(path.join(DOCS, 'README.md'))).toBe(true);
    expect(linkFaults('docs/README.md')).toEqual([]);
  });

  it('documents every variable of the configuration schema, and those of the local API', () => {
    expect(undocumented('docs/configuration.md', [...Object.keys(configSchema.shape), ...LOCAL_API_VARIABLES])).toEqual([]);
  });

  it('names no variable of the worker that the schema does not read', () => {
    const known = new Set([...Object.keys(configSchema.shape), ...LOCAL_API_VARIABLES]);
    for (const file of CONFIG_TABLES) {
      expect(configRows(file).map((row) => row.name).filter((name) => !known.has(name)), file).toEqual([]);
    }
  });

  it('gives each setting the default and the range the schema has', () => {
    const defaults = loadConfig({}) as Record<string, unknown>;
    const serveDefaults = loadServeConfig(SERVE_REQUIRED) as Record<string, unknown>;
    const faults: string[] = [];
    for (const file of CONFIG_TABLES) {
      for (const { name, defaultCell, rangeCell } of configRows(file)) {
        const ofServe = LOCAL_API_VARIABLES.includes(name);
        if (!(name in configSchema.shape) && !ofServe) continue;
        // A required setting has no default to show.
        if (name in SERVE_REQUIRED) continue;
        const value = (ofServe ? serveDefaults : defaults)[name];
        // A default of its own (a number, a boolean, a word): the cell shows it first, in backticks.
        if (typeof value === 'number' || typeof value === 'boolean' || (typeof value === 'string' && value !== '' && !COMPUTED_DEFAULTS.has(name))) {
          const shown = /`([^`]*)`/.exec(defaultCell)?.[1];
          if (shown !== String(value)) faults.push(`${file}: ${name} default ${shown ?? '(none)'}, the schema's ${String(value)}`);
        }
        // A numeric range (`1–64`, `1,000–86,400,000`): both ends accepted, one past each refused.
        const range = /^([\d,]+)–([\d,]+)$/.exec(rangeCell ?? '');
        if (typeof value === 'number' && file === 'docs/configuration.md' && !range) faults.push(`${file}: ${name} has no range`);
        if (!range) continue;
        const [min, max] = [Number(range[1]!.replace(/,/g, '')), Number(range[2]!.replace(/,/g, ''))];
        const accepts = (n: number) => {
          try {
            if (ofServe) loadServeConfig({ ...SERVE_REQUIRED, [name]: String(n) });
            else loadConfig({ [name]: String(n) });
            return true;
          } catch {
            return false;
          }
        };
        if (!accepts(min) || !accepts(max) || (min > 0 && accepts(min - 1)) || accepts(max + 1)) faults.push(`${file}: ${name} range ${min}–${max} is not the schema's`);
      }
    }
    expect(faults).toEqual([]);
  });

  it('documents every error code, and no other, in the table of codes', () => {
    expect(undocumented('docs/api.md', ERROR_CODES)).toEqual([]);
    const text = read('docs/api.md');
    const section = text.slice(text.indexOf('## Error codes'), text.indexOf('\n## ', text.indexOf('## Error codes') + 1));
    const tabled = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(tabled.sort()).toEqual([...ERROR_CODES].sort());
  });

  it('documents every specification field', () => {
    expect(undocumented('docs/specification.md', SPECIFICATION_FIELDS)).toEqual([]);
  });

  it('documents every model family of the model table', () => {
    expect(undocumented('docs/action-spaces.md', MODEL_TABLE.map(([prefix]) => (prefix.endsWith('-') ? `${prefix}…` : prefix)))).toEqual([]);
  });

  it('states each row of the price table with the prices the table has, and no other row', () => {
    const text = read('docs/model.md');
    const table = text.slice(text.indexOf('| family | input | output | cache read | cache write |'));
    const documented = [...table.matchAll(/^\| `([a-z0-9-]+)` \| \$([\d.]+) \| \$([\d.]+) \| \$([\d.]+) \| \$([\d.]+)(?: \(prompts over ([\d,]+) tokens: \$([\d.]+) \/ \$([\d.]+) \/ \$([\d.]+) \/ \$([\d.]+)\))? \|$/gm)].map((m) => m.slice(1).filter((v) => v !== undefined).join(' '));
    const expected = PRICE_TABLE.map(([family, p]) =>
      [family, p.inputPerMTok, p.outputPerMTok, p.cacheReadPerMTok, p.cacheWritePerMTok, ...(p.above ? [p.above.promptTokens.toLocaleString('en-US'), p.above.prices.inputPerMTok, p.above.prices.outputPerMTok, p.above.prices.cacheReadPerMTok, p.above.prices.cacheWritePerMTok] : [])].join(' '),
    );
    expect(documented).toEqual(expected);
  });

  it("states each model family's action space as the model table has it", () => {
    const text = read('docs/action-spaces.md');
    const table = text.slice(text.indexOf('| model family | computer use |'));
    const faults: string[] = [];
    let checked = 0;
    for (const row of table.split('\n').slice(2)) {
      if (!row.startsWith('|')) break;
      const [families = '', computer = '', browser = '', images = ''] = row.split('|').slice(1).map((cell) => cell.trim());
      // `claude-3-…` and "any other id" name no one model: the ids of the row are checked.
      const ids = [...families.matchAll(/`(claude-[a-z0-9-]+)`/g)].map((m) => m[1]!);
      for (const id of ids) {
        checked++;
        const tools = modelTools(id);
        const chosen = chooseActionSpace(id, undefined);
        const asked = chooseActionSpace(id, 'browser');
        const shown = {
          computer: /`([a-z_0-9]+)`/.exec(computer)?.[1],
          browser: browser.startsWith('default') ? 'default' : browser.startsWith('on request') ? 'on request' : browser,
          images: images,
        };
        const actual = {
          computer: tools.computer.type,
          browser: chosen.ok && chosen.kind === 'browser' ? 'default' : asked.ok ? 'on request' : 'refused',
          images: `${tools.images.maxEdgePx} px, ${tools.images.maxPixels / 1_000_000} MP`,
        };
        if (JSON.stringify(shown) !== JSON.stringify(actual)) faults.push(`${id}: docs ${JSON.stringify(shown)}, code ${JSON.stringify(actual)}`);
      }
    }
    expect(checked).toBeGreaterThan(15);
    expect(faults).toEqual([]);
  });

  it('documents every event type written to logs.jsonl', () => {
    const types = new Set<string>();
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (entry.name.endsWith('.ts')) {
          const source = readFileSync(file, 'utf8');
          // `.emit('type', …)`, or `.emit(cond ? 'a' : 'b', …)`.
          for (const m of source.matchAll(/\.emit\(\s*(?:'([a-z_]+)'|[^,?()]*\?\s*'([a-z_]+)'\s*:\s*'([a-z_]+)')/g)) {
            for (const type of m.slice(1)) if (type) types.add(type);
          }
        }
      }
    };
    walk(path.join(ROOT, 'src'));
    // The scan must find the events it is meant to check, or it checks nothing.
    expect(types).toContain('model_turn');
    expect(types).toContain('execution_failed');
    expect(undocumented('docs/counters-and-artifacts.md', [...types].sort())).toEqual([]);
    // And the table names no type the code no longer writes.
    const text = read('docs/counters-and-artifacts.md');
    const table = text.slice(text.indexOf('### Event types'));
    const tabled = [...table.matchAll(/^\| ((?:`[a-z_]+`(?:, )?)+) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([a-z_]+)`/g)].map((t) => t[1]!));
    expect(tabled.length).toBeGreaterThan(20);
    expect(tabled.filter((type) => !types.has(type))).toEqual([]);
  });

  it('lists every artifact file with the type it is stored with', () => {
    const text = read('docs/counters-and-artifacts.md');
    const rows = new Map([...text.matchAll(/^\| `([^`]+)` \| `([^`]+)` \|/gm)].map((m) => [m[1]!, m[2]!]));
    for (const { name, contentType } of Object.values(ARTIFACT_FILES)) expect(rows.get(name), name).toBe(contentType);
    expect(rows.get(`${STEPS_FOLDER}/NNN.jpg`)).toBe('image/jpeg');
  });

  it('documents every metric of /metrics', async () => {
    const metrics = createMetrics();
    const names = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name).filter((name) => !name.startsWith('execution_worker_process_'));
    expect(names.length).toBeGreaterThan(5);
    const text = read('docs/operations.md');
    expect(names.filter((name) => !text.includes(name))).toEqual([]);
  });

  it('lists in the metrics table exactly the metrics of /metrics, with their type and labels', async () => {
    const metrics = createMetrics();
    const served = (await metrics.registry.getMetricsAsJSON())
      .filter((m) => !m.name.startsWith('execution_worker_process_'))
      .map((m) => {
        const labels = (metrics.registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
        return `${m.name}{${labels.join(', ')}} ${m.type}`;
      });
    const documented = [...read('docs/operations.md').matchAll(/^\| `(execution_worker_[a-z_]+)(?:\{([^}]*)\})?` \| ([a-z]+) \|/gm)].map((m) => `${m[1]}{${m[2] ?? ''}} ${m[3]}`);
    expect(documented.length).toBeGreaterThan(5);
    expect(documented.sort()).toEqual(served.sort());
  });

  it('links only to files and headings inside the repository', () => {
    expect(docsFiles().flatMap(linkFaults)).toEqual([]);
  });

  it('sends no reader to ../shared, the contract file or the seed', () => {
    expect(docsFiles().filter((file) => OUTSIDE_REFERENCES.test(read(file)))).toEqual([]);
  });
});

describe('README.md', () => {
  it('links only to files and headings inside the repository, and not to ../shared', () => {
    expect(linkFaults('README.md')).toEqual([]);
    expect(read('README.md')).not.toMatch(OUTSIDE_REFERENCES);
  });

  it('reads as a newcomer meets the product: what it is, serve, the two commands, the curl quick start, then deployment and the contents', () => {
    const readme = read('README.md');
    const intro = readme.slice(0, readme.indexOf('\n## '));
    expect(intro).toMatch(/`execution-worker serve` is the service and its dashboard/);
    const headings = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(headings.slice(0, 2)).toEqual(['Two commands', 'Quick start with curl']);
    expect(headings.slice(-2)).toEqual(['Running in production', 'Contents']);
    // The long reference and the history live in docs/, not here.
    expect(readme).not.toMatch(/this round|what changed/i);
  });
});

/** The project's own source files: comments in them point readers into docs/. */
const sourceFiles = () =>
  ['src', 'bench', 'scripts', 'demo'].flatMap((folder) =>
    readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
      .filter((name) => /\.(ts|js|sh)$/.test(name))
      .map((name) => path.join(folder, name)),
  );

describe('source comments', () => {
  it('cite docs/, never sections of an outside document (an RFC section is fine)', () => {
    const citations = sourceFiles().flatMap((file) =>
      read(file)
        .split('\n')
        .filter((line) => /§\s*\d/.test(line) && !/RFC \d+ §/.test(line))
        .map((line) => `${file}: ${line.trim()}`),
    );
    expect(citations).toEqual([]);
    expect(sourceFiles().filter((file) => OUTSIDE_REFERENCES.test(read(file)))).toEqual([]);
  });

  it('give the reason, never a tracker number, a review finding or the house-style file, none of which a reader has', () => {
    // The conformance tests (test/contract/) stay as they are written against the service's description.
    const tests = readdirSync(path.join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts') && !name.startsWith('contract'))
      .map((name) => path.join('test', name));
    const docker = readdirSync(path.join(ROOT, 'docker'), { recursive: true, encoding: 'utf8' })
      .filter((name) => /\.(ya?ml|sh|conf)$|Dockerfile/.test(name))
      .map((name) => path.join('docker', name));
    const cited = [...sourceFiles(), ...tests, ...docker, 'Dockerfile'].flatMap((file) =>
      read(file)
        .split('\n')
        .filter((line) => /\b(?:issue|finding)s? #?\d+|STYLE\.md|contract\s*§/i.test(line))
        .map((line) => `${file}: ${line.trim()}`),
    );
    expect(cited).toEqual([]);
  });

  it('point at pages and headings of docs/ that exist', () => {
    const faults: string[] = [];
    for (const file of sourceFiles()) {
      for (const m of read(file).matchAll(/\bdocs\/([a-z0-9-]+\.md)(?:#([a-z0-9_-]+))?/g)) {
        const page = path.join('docs', m[1]!);
        if (!existsSync(path.join(ROOT, page))) faults.push(`${file}: ${m[0]} (no such page)`);
        else if (m[2] && !anchors(read(page)).has(m[2])) faults.push(`${file}: ${m[0]} (no such heading)`);
      }
    }
    expect(faults).toEqual([]);
  });
});

describe('the link checker', () => {
  // The checks above pass vacuously if the parser finds no links: make sure it finds each kind.
  it('finds every kind of link and judges it', () => {
    const sample = [
      '[a](queue-and-jobs.md#lost-executions) [b](../../elsewhere.md) [c](https://example.com)',
      '<https://example.com/x> see https://example.com/y `[not](a-link.md)`',
      '[d]: missing.md',
      '```',
      '[e](inside-a-fence.md)',
      '```',
    ].join('\n');
    expect(linkTargets(sample)).toEqual(['queue-and-jobs.md#lost-executions', '../../elsewhere.md', 'https://example.com', 'missing.md', 'https://example.com/x', 'https://example.com/y']);
    expect(anchors('# The `started` call\n## Tabs and `browser_state`\n## Tabs and `browser_state`')).toEqual(new Set(['the-started-call', 'tabs-and-browser_state', 'tabs-and-browser_state-1']));
  });
});
