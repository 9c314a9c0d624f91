import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { workflow } from '../../src/contract/workflows.js';
import { startHarness, type Harness } from './local-api-harness.js';

/**
 * A 422 about an input names where the fault is, never a key of a secret (docs/api.md#errors,
 * docs/secrets.md): below a `writeOnly`/`x-secret` mark every element of `loc` reads `(secret)`.
 * Real HTTP, real Redis.
 */

let h: Harness;
let workflowId: string;

beforeAll(async () => {
  h = await startHarness();
  const payloadSchema = {
    type: 'object',
    properties: {
      creds: { type: 'object', writeOnly: true, additionalProperties: { type: 'string' } },
      vault: { 'x-secret': true, type: 'object', properties: { inner: { type: 'object', additionalProperties: false } } },
      plain: { type: 'object', additionalProperties: { type: 'string' } },
    },
  };
  const made = await h.api.as(workflow)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], payloadSchema });
  expect(made.status).toBe(201);
  workflowId = made.body.workflow_uuid;
});

afterAll(async () => {
  await h?.close();
});

describe('a 422 about an input', () => {
  it('shows the keys of an object under a secret mark as (secret), and every other key as it is', async () => {
    const inputPayload = { creds: { sk_live_a1b2c3d4e5: 5, '4111111111111111': 6 }, vault: { inner: { 'hunter2-key': 1 } }, plain: { visible_key: 7 } };
    const res = await h.api.as(errorBody)('POST', `/api/workflows/${workflowId}/execute`, { inputPayload });
    expect(res.status).toBe(422);
    const text = JSON.stringify(res.body);
    for (const secretKey of ['sk_live_a1b2c3d4e5', '4111111111111111', '4111111111111110', 'hunter2-key']) expect(text).not.toContain(secretKey);
    const locs = res.body.detail!.map((d) => d.loc);
    expect(locs).toEqual(
      expect.arrayContaining([
        ['body', 'inputPayload', 'creds', '(secret)'],
        ['body', 'inputPayload', 'vault', '(secret)', '(secret)'],
        ['body', 'inputPayload', 'plain', 'visible_key'],
      ]),
    );
  });
});
