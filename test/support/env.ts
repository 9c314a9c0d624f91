import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Settings shared by the tests that run the worker on real parts. */
export const CHROMIUM_FLAGS_NOTE = 'Debian Chromium at /usr/bin/chromium unless CHROMIUM_PATH says otherwise';

export function hostRules(...names: string[]): string {
  return names.map((n) => `MAP ${n} 127.0.0.1`).join(',');
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), `${prefix}-`));
}

/** The signal of a run that is never stopped: for tests that call the browser ports directly. */
export const neverAborted: AbortSignal = new AbortController().signal;
