import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { startHarness, type Harness } from './local-api-harness.js';

/**
 * A default input's sealed secret cannot be read back through validation
 * (docs/security.md#secrets-at-rest), on the real local API and a real Redis: an edit that keeps
 * the secret by its placeholder, or by sending no configuration, under a schema whose checks
 * changed, is refused with the same answer whatever the guess — right or wrong — and stores
 * nothing; under the same schema the secret is kept.
 */

const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
const PASSWORD = 'hunter2xyz';
const signIn = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true } } };
const withPassword = (extra: Record<string, unknown>) => ({ type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true, ...extra } } });

let k: Harness;
let id: string;
beforeAll(async () => {
  k = await startHarness({ inputKeys: keys });
  const created = await k.call('POST', '/api/workflows', { name: 'Sign in', prompt: 'Sign in', allowedDomains: ['shop.test'], payloadSchema: signIn, configuration: { inputPayload: { user: 'kofi', password: PASSWORD } } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  id = created.body.workflow_uuid as string;
});
afterAll(async () => {
  await k?.close();
});

const versionCount = async () => (await k.call('GET', `/api/workflows/${id}/versions`)).body.total as number;

describe('PATCH /api/workflows/{id} keeping a sealed secret', () => {
  it('answers the same 422 for a changed pattern, const or enum at the secret, whatever the guess, and stores nothing', async () => {
    const versions = await versionCount();
    let reference: unknown;
    await fc.assert(
      fc.asyncProperty(
        // Right guesses (pieces of the real value) among generated ones.
        fc.oneof(fc.constantFrom('h', 'hu', 'hunter2', PASSWORD), fc.stringMatching(/^[a-z0-9]{1,10}$/)),
        fc.constantFrom('pattern', 'const', 'enum'),
        fc.boolean(),
        async (guess, keyword, sendsConfiguration) => {
          const check = keyword === 'pattern' ? { pattern: `^${guess}` } : keyword === 'const' ? { const: guess } : { enum: [guess] };
          const body = { status: 'draft', payloadSchema: withPassword(check), ...(sendsConfiguration ? { configuration: { inputPayload: { user: 'kofi', password: '{{password}}' } } } : {}) };
          const answer = await k.call('PATCH', `/api/workflows/${id}`, body);
          expect(answer.status, JSON.stringify(answer.body)).toBe(422);
          reference ??= answer.body;
          expect(answer.body).toEqual(reference);
        },
      ),
      { numRuns: 30 },
    );
    expect(reference).toMatchObject({ detail: [{ loc: ['body', 'configuration', 'inputPayload', 'password'], type: 'secret_schema_changed' }] });
    expect(JSON.stringify(reference)).not.toContain('hunter');
    expect(await versionCount()).toBe(versions);
  });

  it('keeps the secret under the same schema (annotations aside), and takes a clear value under a new one', async () => {
    const kept = await k.call('PATCH', `/api/workflows/${id}`, { payloadSchema: { ...signIn, title: 'Sign in' }, configuration: { inputPayload: { user: 'ann', password: '{{password}}' } } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.current_version.configuration.inputPayload).toEqual({ user: 'ann', password: '{{password}}' });
    const run = await k.call('POST', `/api/workflows/${id}/execute`, {});
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    expect((await k.queue.getJob(run.body.execution_uuid as string))?.data.inputPayload).toEqual({ user: 'ann', password: PASSWORD });

    // The caller who knows the value sends it again with the new schema.
    const resent = await k.call('PATCH', `/api/workflows/${id}`, { payloadSchema: withPassword({ pattern: '^new' }), configuration: { inputPayload: { user: 'ann', password: 'new-Pa55word' } } });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(resent.body.current_version.configuration.inputPayload).toEqual({ user: 'ann', password: '{{password}}' });
  });
});
