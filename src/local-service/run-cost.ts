import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { usageReport } from '../contract/output.js';
import type { Logger } from '../telemetry/types.js';

/**
 * The cost of a finished execution, for the dashboard (docs/api.md#cost): its `output.json`'s
 * `usage.estimatedCostUsd`, read from the artifacts folder the dashboard serves when the worker
 * reports the run's end (the worker writes `output.json` before it reports). The reports' bodies
 * stay as the service describes them: the cost travels in the artifact, not in the report.
 * Unknown (null) without an artifacts folder (artifacts in a bucket), without the file, or with a
 * file that does not say.
 */
export type RunCostReader = (executionId: string) => Promise<number | null>;

/**
 * What this reads of output.json: its usage's cost, as the contract declares it (the rest of the
 * document, and the usage's other fields, may be of an older or newer worker).
 */
const outputCost = z.object({ usage: usageReport.pick({ estimatedCostUsd: true }) });

/** Cap on the bytes read: output.json holds the agent's output, which may be large; a cost is not worth more. */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function createRunCostReader(artifactsDir: string | undefined, logger: Logger): RunCostReader {
  if (!artifactsDir) return async () => null;
  const root = path.resolve(artifactsDir);
  return async (executionId) => {
    // The artifacts' layout as the dashboard reads it (`executions/{id}/output.json`, no prefix).
    // An id of letters, digits, `-` and `_` only (the service's ids are UUIDs) is one path
    // segment that cannot climb out of the folder.
    if (!SAFE_ID.test(executionId)) return null;
    const file = path.join(root, 'executions', executionId, 'output.json');
    try {
      // The file itself, never what a link points at; a regular file, read from the handle opened
      // (not a name looked up again), and no more than the cap: a device or a growing file reads
      // nothing more than that.
      const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      let text: string;
      try {
        const info = await handle.stat();
        if (!info.isFile() || info.size > MAX_OUTPUT_BYTES) return null;
        const buffer = Buffer.alloc(info.size);
        const { bytesRead } = await handle.read(buffer, 0, info.size, 0);
        text = buffer.subarray(0, bytesRead).toString('utf8');
      } finally {
        await handle.close();
      }
      const parsed = outputCost.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data.usage.estimatedCostUsd : null;
    } catch (err) {
      // No output.json (a run that failed before it wrote one) is no cost to show, not an error.
      // A link in its place (ELOOP) is refused like any other file that is not output.json.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn({ executionId, err: String(err) }, 'output.json could not be read for the execution\'s cost');
      return null;
    }
  };
}
