import path from 'node:path';
import { expect } from 'vitest';

/**
 * Reading a Dockerfile and its .dockerignore without a container engine, for the tests that
 * check the deployment files (test/unit/deploy-manifests.test.ts).
 */

export interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

export interface Stage {
  readonly base: string;
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

/** Instructions in order: comments dropped, `\` continuations joined. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i]!.trim();
    if (first === '' || first.startsWith('#')) continue;
    const start = i + 1;
    let joined = first;
    while (joined.endsWith('\\') && i + 1 < lines.length) {
      joined = joined.slice(0, -1);
      const next = lines[++i]!.trim();
      if (!next.startsWith('#')) joined += ` ${next}`;
    }
    const match = /^(\S+)\s*(.*)$/s.exec(joined);
    out.push({ keyword: match![1]!.toUpperCase(), args: match![2]!.trim(), line: start });
  }
  return out;
}

export function splitStages(instructions: Instruction[]): { args: Map<string, string>; stages: Stage[] } {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const [image, as, name] = ins.args.split(/\s+/);
      const base = image!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string | undefined, b: string | undefined) => args.get((a ?? b)!) ?? '');
      stages.push({ base, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else if (stages.length === 0) {
      expect(ins.keyword, `line ${ins.line}: only ARG may come before FROM`).toBe('ARG');
      const [key, value] = ins.args.split('=');
      args.set(key!, value ?? '');
    } else {
      stages.at(-1)!.instructions.push(ins);
    }
  }
  return { args, stages };
}

/** `["a", "b"]` → ['a', 'b']; anything else (shell form) → undefined. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(args);
  return Array.isArray(parsed) && parsed.every((p) => typeof p === 'string') ? parsed : undefined;
}

export interface Copy {
  readonly from: string | undefined;
  readonly sources: string[];
  readonly dest: string;
}

export function parseCopy(args: string): Copy {
  const words = execForm(args) ?? args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

export function envOf(stage: Stage): Map<string, string> {
  const env = new Map<string, string>();
  for (const ins of stage.instructions.filter((i) => i.keyword === 'ENV')) {
    for (const pair of ins.args.split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq > 0) env.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  }
  return env;
}

/** A `.dockerignore` matcher: `*`, `?`, `**`, leading `!`, last match wins, parents count. */
export function dockerIgnore(text: string): (relPath: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = path.posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, ''));
      const source = pattern
        .split('/')
        .map((part) =>
          part === '**'
            ? '.*'
            : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]'),
        )
        .join('/')
        .replace(/\.\*\//g, '(?:.*/)?');
      return { negate, regex: new RegExp(`^${source}$`) };
    });
  return (relPath) => {
    const parts = relPath.split('/');
    let ignored = false;
    for (let n = 1; n <= parts.length; n++) {
      const prefix = parts.slice(0, n).join('/');
      for (const rule of rules) if (rule.regex.test(prefix)) ignored = !rule.negate;
      if (ignored) return true;
    }
    return ignored;
  };
}

/** Where COPY puts `source`, relative to WORKDIR: into `dest/` when it ends in `/`, else as `dest`. */
export function copiedTo(source: string, dest: string): string {
  const into = dest.endsWith('/') ? path.posix.join(dest, path.posix.basename(source)) : dest;
  return path.posix.normalize(into);
}
