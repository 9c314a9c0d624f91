/**
 * ESLint rule `local/no-import-cycle`: a module of `src/` must not reach itself through its
 * relative imports (type-only ones included: a cycle of types is still two files that cannot be
 * understood one without the other). Reported on the import that closes the ring, with the ring.
 *
 * Written here rather than taken from eslint-plugin-import: that plugin brings a resolver and
 * some thirty packages for this one check, and the project's imports are all relative `.js`
 * specifiers of `.ts` files, which TypeScript's own `preProcessFile` lists without a full parse.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Each file's relative imports, resolved to the `.ts` files they name; kept until the file changes. */
const importsByFile = new Map();

/** The `.ts` file an import specifier of `from` names, or undefined (a package, a JSON file, nothing there). */
function resolve(from, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const target = path.resolve(path.dirname(from), specifier).replace(/\.js$/, '.ts');
  if (!target.endsWith('.ts')) return undefined;
  return statSync(target, { throwIfNoEntry: false })?.isFile() ? target : undefined;
}

function importsOf(file) {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) return [];
  const known = importsByFile.get(file);
  if (known && known.mtimeMs === stat.mtimeMs) return known.targets;
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const targets = [...new Set(importedFiles.map((imported) => resolve(file, imported.fileName)).filter(Boolean))];
  importsByFile.set(file, { mtimeMs: stat.mtimeMs, targets });
  return targets;
}

/** The shortest chain of imports from `start` back to `home`, or undefined when there is none. */
function pathBack(start, home) {
  const cameFrom = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift();
    for (const next of importsOf(file)) {
      if (next === home) {
        const chain = [file];
        for (let at = cameFrom.get(file); at !== undefined; at = cameFrom.get(at)) chain.unshift(at);
        return chain;
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, file);
        queue.push(next);
      }
    }
  }
  return undefined;
}

export const noImportCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'forbid import cycles between the modules of src/' },
    schema: [],
    messages: { cycle: 'import cycle: {{ring}}' },
  },
  create(context) {
    const home = path.resolve(context.filename);
    const root = context.cwd;
    const check = (node) => {
      if (!node.source || typeof node.source.value !== 'string') return;
      const target = resolve(home, node.source.value);
      if (!target) return;
      const chain = target === home ? [] : pathBack(target, home);
      if (!chain) return;
      const ring = [home, ...chain, home].map((file) => path.relative(root, file)).join(' → ');
      context.report({ node: node.source, messageId: 'cycle', data: { ring } });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};
