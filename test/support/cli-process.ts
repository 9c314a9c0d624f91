import { spawn } from 'node:child_process';

/**
 * The CLI as a user runs it (`execution-worker …`, from source through test/support/cli-entry.ts),
 * in a process of its own: its exit code and both outputs whole. Ended with SIGTERM after
 * `timeoutMs`, so a hung run fails its test instead of outliving it.
 */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 90_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/cli-entry.ts', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const term = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(term);
      resolve({ code, stdout, stderr });
    });
  });
}
