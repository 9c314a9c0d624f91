import { rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * What deleting a workflow does to its executions' artifacts (docs/api.md#deleting-a-workflow):
 * every file the workers wrote under `{S3_PREFIX}executions/{executionId}/` (video, logs,
 * output, step pictures, downloads, the recording) is removed, so nothing of the workflow is
 * served afterwards. The bucket's eraser is wired by compose.ts; the folder's is here.
 */
export interface ArtifactEraser {
  /** Removes every artifact of the execution; one that has none is no fault. */
  eraseExecution(executionId: string): Promise<void>;
  close?(): void;
}

/** An execution id as the stores accept it: one path segment, never `.`/`..`. */
const SAFE_ID = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$/;

/** The artifacts in a local folder (ARTIFACTS_DIR), under `prefix` (S3_PREFIX, `''` or ending in `/`). */
export function createFolderEraser(root: string, prefix = ''): ArtifactEraser {
  const base = path.resolve(root, ...prefix.split('/').filter((part) => part !== ''), 'executions');
  return {
    async eraseExecution(executionId) {
      // An id that is not one segment names no folder of an execution: nothing to remove.
      if (!SAFE_ID.test(executionId)) return;
      await rm(path.join(base, executionId), { recursive: true, force: true });
    },
  };
}
