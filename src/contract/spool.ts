/**
 * An artifact kept in the worker's local spool until storage takes it (docs/counters-and-artifacts.md#artifacts):
 * its `.meta.json` beside the file, written by the process that spooled it and read back by the
 * next one at start.
 */
import { z } from 'zod';

export const spoolEntry = z.object({
  executionId: z.string().min(1),
  /** The artifact's name in the execution (`logs.jsonl`, `steps/001.jpg`). */
  name: z.string().min(1),
  contentType: z.string().min(1),
  /** Where the spooled bytes are, on this machine. */
  file: z.string().min(1),
});
export type SpoolEntry = z.infer<typeof spoolEntry>;
