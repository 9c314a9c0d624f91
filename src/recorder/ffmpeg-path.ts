import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Finds the ffmpeg binary: the configured path (`FFMPEG_PATH`), else `ffmpeg` on `PATH`, else
 * the binary of the `ffmpeg-static` npm package when it happens to be installed (it is not a
 * dependency of ours; it is looked up only so that an image without a system ffmpeg can add it).
 */

export interface FfmpegLocation {
  path: string;
  source: 'configured' | 'path' | 'ffmpeg-static';
}

export class FfmpegNotFoundError extends Error {
  override readonly name = 'FfmpegNotFoundError';
  readonly code = 'internal';
}

export interface ResolveFfmpegOptions {
  /** The configured binary; when set it must exist, nothing else is tried. */
  configuredPath?: string;
  /** `PATH` to search (defaults to the process's). */
  searchPath?: string;
  /** Loads `ffmpeg-static` (injectable for tests). */
  loadStatic?: () => Promise<unknown>;
}

export async function resolveFfmpegPath(options: ResolveFfmpegOptions = {}): Promise<FfmpegLocation> {
  if (options.configuredPath) {
    if (await isExecutable(options.configuredPath)) return { path: options.configuredPath, source: 'configured' };
    // A configured path that does not work is a configuration error: do not silently use another.
    throw new FfmpegNotFoundError(`FFMPEG_PATH ${options.configuredPath} is not an executable file`);
  }
  const onPath = await findOnPath('ffmpeg', options.searchPath ?? process.env.PATH ?? '');
  if (onPath) return { path: onPath, source: 'path' };
  const fromStatic = await staticBinary(options.loadStatic ?? defaultLoadStatic);
  if (fromStatic) return { path: fromStatic, source: 'ffmpeg-static' };
  throw new FfmpegNotFoundError('ffmpeg not found: set FFMPEG_PATH, install ffmpeg on PATH, or add the ffmpeg-static package');
}

async function findOnPath(name: string, searchPath: string): Promise<string | undefined> {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

async function staticBinary(load: () => Promise<unknown>): Promise<string | undefined> {
  let mod: unknown;
  try {
    mod = await load();
  } catch {
    return undefined; // not installed
  }
  // ffmpeg-static's default export is the binary's path (null on unsupported platforms).
  const candidate = typeof mod === 'string' ? mod : (mod as { default?: unknown } | null)?.default;
  if (typeof candidate === 'string' && (await isExecutable(candidate))) return candidate;
  return undefined;
}

function defaultLoadStatic(): Promise<unknown> {
  // A variable specifier keeps TypeScript from requiring the (absent) package's types.
  const specifier = 'ffmpeg-static';
  return import(specifier);
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
