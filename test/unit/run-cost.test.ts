import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunCostReader } from '../../src/local-service/run-cost.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';

/**
 * The local API reads an execution's cost from its output.json in the artifacts folder
 * (docs/api.md#cost). The id comes from a request path: whatever it is, the reader reads that
 * execution's own output.json or nothing, never a file elsewhere.
 */

let root: string;
const write = async (rel: string, doc: unknown) => {
  await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
  await fs.writeFile(path.join(root, rel), typeof doc === 'string' ? doc : JSON.stringify(doc));
};

beforeAll(async () => {
  const base = await fs.mkdtemp(path.join(os.tmpdir(), 'run-cost-'));
  root = path.join(base, 'artifacts');
  await write('executions/e-1/output.json', { status: 'completed', usage: { estimatedCostUsd: 0.012345 } });
  await write('executions/no-cost/output.json', { status: 'completed', usage: { estimatedCostUsd: null } });
  await write('executions/broken/output.json', '{ not json');
  await write('executions/negative/output.json', { usage: { estimatedCostUsd: -1 } });
  // Decoys outside an execution's own folder.
  await write('output.json', { usage: { estimatedCostUsd: 999 } });
  await write('executions/output.json', { usage: { estimatedCostUsd: 998 } });
  await write('../output.json', { usage: { estimatedCostUsd: 997 } });
  await write('executions/e-1/nested/output.json', { usage: { estimatedCostUsd: 996 } });
  // An output.json that is a link (to another run's file, to a device) or a folder is read as none.
  await fs.mkdir(path.join(root, 'executions', 'linked'), { recursive: true });
  await fs.symlink(path.join(root, 'executions', 'e-1', 'output.json'), path.join(root, 'executions', 'linked', 'output.json'));
  await fs.mkdir(path.join(root, 'executions', 'device'), { recursive: true });
  await fs.symlink('/dev/zero', path.join(root, 'executions', 'device', 'output.json'));
  await fs.mkdir(path.join(root, 'executions', 'folder', 'output.json'), { recursive: true });
});

afterAll(async () => {
  await fs.rm(path.dirname(root), { recursive: true, force: true });
});

describe('the run cost reader', () => {
  it('reads the cost an output.json states; null where there is none to read', async () => {
    const read = createRunCostReader(root, createSilentLogger());
    expect(await read('e-1')).toBe(0.012345);
    expect(await read('no-cost')).toBeNull();
    expect(await read('broken')).toBeNull();
    expect(await read('negative')).toBeNull();
    expect(await read('missing')).toBeNull();
    for (const odd of ['linked', 'device', 'folder']) expect(await read(odd), odd).toBeNull();
    expect(await createRunCostReader(undefined, createSilentLogger())('e-1')).toBeNull();
  });

  it('whatever the id (generated, with separators, dots and encodings), it reads its own folder or nothing', async () => {
    const read = createRunCostReader(root, createSilentLogger());
    const pieces = fc.constantFrom('..', '.', '/', '\\', '%2e', '%2f', 'e-1', 'nested', 'executions', 'output.json', '\0', '', '~');
    const id = fc.oneof(fc.array(pieces, { maxLength: 6 }).map((p) => p.join('')), fc.string(), fc.constantFrom('e-1', '../output.json', '..', 'e-1/nested', '../executions'));
    await fc.assert(
      fc.asyncProperty(id, async (candidate) => {
        const cost = await read(candidate);
        expect(cost === null || (candidate === 'e-1' && cost === 0.012345)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});
