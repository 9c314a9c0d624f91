import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint, type Rule } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../support/env.js';

/** The lint rule that keeps `src/` free of import cycles (scripts/lint/no-import-cycle.js), on files of a test's own. */
const RULE = pathToFileURL(path.resolve('scripts/lint/no-import-cycle.js')).href;

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** Writes `files` (name → source) into a folder of their own and lints them all with the rule alone. */
async function lint(files: Record<string, string>): Promise<string[]> {
  const dir = await tempDir('import-cycles');
  dirs.push(dir);
  for (const [name, source] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), source);
  }
  const { noImportCycle } = (await import(RULE)) as { noImportCycle: Rule.RuleModule };
  const eslint = new ESLint({
    cwd: dir,
    overrideConfigFile: true,
    overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser as never }, plugins: { local: { rules: { 'no-import-cycle': noImportCycle } } }, rules: { 'local/no-import-cycle': 'error' } }],
  });
  const results = await eslint.lintFiles(['**/*.ts']);
  return results.flatMap((r) => r.messages.map((m) => `${path.relative(dir, r.filePath)}:${m.line} ${m.message}`)).sort();
}

describe('the import-cycle lint rule', () => {
  it('reports each import that closes a ring, type-only imports included, with the ring', async () => {
    const found = await lint({
      'agent/loop.ts': "import { runCalls } from './calls.js';\nexport type Run = { n: number };\nexport const loop = () => runCalls();\n",
      'agent/calls.ts': "import type { Run } from './loop.js';\nexport const runCalls = (run?: Run) => run;\n",
      'runner/a.ts': "export * from '../runner/b.js';\n",
      'runner/b.ts': "import '../domain/c.js';\nexport const b = 1;\n",
      'domain/c.ts': "export { b } from '../runner/b.js';\n",
    });
    expect(found).toEqual([
      'agent/calls.ts:1 import cycle: agent/calls.ts → agent/loop.ts → agent/calls.ts',
      'agent/loop.ts:1 import cycle: agent/loop.ts → agent/calls.ts → agent/loop.ts',
      'domain/c.ts:1 import cycle: domain/c.ts → runner/b.ts → domain/c.ts',
      'runner/b.ts:1 import cycle: runner/b.ts → domain/c.ts → runner/b.ts',
    ]);
  });

  it('finds a long ring, and nothing in a tree of imports or in packages', async () => {
    const found = await lint({
      'a.ts': "import { b } from './b.js';\nimport { z } from 'zod';\nexport const a = [b, z];\n",
      'b.ts': "import { c } from './c.js';\nexport const b = c;\n",
      'c.ts': "import { leaf } from './leaf.js';\nexport const c = leaf;\n",
      'leaf.ts': 'export const leaf = 1;\n',
      'ring/one.ts': "import './two.js';\n",
      'ring/two.ts': "import './three.js';\n",
      'ring/three.ts': "import './four.js';\n",
      'ring/four.ts': "import './one.js';\n",
    });
    expect(found).toHaveLength(4);
    expect(found[0]).toBe('ring/four.ts:1 import cycle: ring/four.ts → ring/one.ts → ring/two.ts → ring/three.ts → ring/four.ts');
  });
});

/** Lints `source` as if it stood at `filePath` in this repository, under the repository's own lint config. */
async function lintAt(filePath: string, source: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: process.cwd() });
  const [result] = await eslint.lintText(source, { filePath: path.resolve(filePath) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('the floors of src/ (eslint.config.js)', () => {
  const downward: Array<[string, string]> = [
    ['src/execution/x.ts', "import type { Counters } from '../contract/reports.js';\nexport type X = Counters;\n"],
    ['src/agent/x.ts', "import type { ExecutionEventSink } from '../execution/events.js';\nexport type X = ExecutionEventSink;\n"],
    ['src/run-cache/x.ts', "import { runAgent } from '../agent/loop.js';\nexport const x = runAgent;\n"],
    ['src/runner/x.ts', "import { runWithCache } from '../run-cache/cached-run.js';\nexport const x = runWithCache;\n"],
    ['src/domain/x.ts', "import { formatPath } from '../contract/key-path.js';\nexport const x = formatPath;\n"],
  ];
  it.each(downward)('lets %s import a lower floor', async (file, source) => {
    expect(await lintAt(file, source)).toEqual([]);
  });

  const upward: Array<[string, string]> = [
    ['src/execution/x.ts', "import type { RunnerDeps } from '../runner/types.js';\nexport type X = RunnerDeps;\n"],
    ['src/execution/x.ts', "import type { Specification } from '../domain/specification.js';\nexport type X = Specification;\n"],
    ['src/agent/x.ts', "import type { RunnerDeps } from '../runner/types.js';\nexport type X = RunnerDeps;\n"],
    ['src/agent/x.ts', "import type { RunCacheStore } from '../run-cache/types.js';\nexport type X = RunCacheStore;\n"],
    ['src/run-cache/x.ts', "import type { RunnerDeps } from '../runner/types.js';\nexport type X = RunnerDeps;\n"],
    ['src/domain/x.ts', "import type { TokenUsage } from '../model/types.js';\nexport type X = TokenUsage;\n"],
    ['src/contract/x.ts', "import type { Specification } from '../domain/specification.js';\nexport type X = Specification;\n"],
  ];
  it.each(upward)('refuses %s an import from a higher floor', async (file, source) => {
    const found = await lintAt(file, source);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^no-restricted-imports: /);
  });
});
