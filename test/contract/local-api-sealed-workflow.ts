import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import type { z } from 'zod';
import { versionList, workflow } from '../../src/contract/workflows.js';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { startHarness, type Harness } from './local-api-harness.js';

/** A local API that seals default inputs' secrets, and the one workflow a file's tests edit on it. */
export interface SealedWorkflow {
  harness: Harness;
  /** The answer's body to the request that made the workflow. */
  created: z.input<typeof workflow>;
  id: string;
  /** How many versions the workflow has now. */
  versionCount(): Promise<number>;
}

/**
 * Starts a local API with keys of its own for the default inputs' secrets (PROFILE_KEYS) and
 * makes a workflow on it with `body` (POST /api/workflows, 201) before a file's tests; closes the
 * API after them. The fields are set once `beforeAll` has run.
 */
export function useSealedWorkflow(body: Record<string, unknown>): SealedWorkflow {
  const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
  const rig = {
    async versionCount() {
      return (await rig.harness.api.as(versionList)('GET', `/api/workflows/${rig.id}/versions`)).body.total;
    },
  } as SealedWorkflow;
  beforeAll(async () => {
    rig.harness = await startHarness({ inputKeys: keys });
    const created = await rig.harness.api.as(workflow)('POST', '/api/workflows', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    rig.created = created.body;
    rig.id = created.body.workflow_uuid;
  });
  afterAll(async () => {
    await rig.harness?.close();
  });
  return rig;
}
