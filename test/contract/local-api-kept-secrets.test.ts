import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import { useSealedWorkflow } from './local-api-sealed-workflow.js';

/**
 * A default input's sealed secret cannot be read back through validation
 * (docs/security.md#secrets-at-rest), on the real local API and a real Redis: an edit that keeps
 * the secret by its placeholder, or by sending no configuration, under a schema whose checks
 * changed, is refused with the same answer whatever the guess — right or wrong — and stores
 * nothing; under the same schema the secret is kept.
 */

const PASSWORD = 'hunter2xyz';
const signIn = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true } } };
const withPassword = (extra: Record<string, unknown>) => ({ type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true, ...extra } } });

const sealed = useSealedWorkflow({ name: 'Sign in', prompt: 'Sign in', allowedDomains: ['shop.test'], payloadSchema: signIn, configuration: { inputPayload: { user: 'kofi', password: PASSWORD } } });

describe('PATCH /api/workflows/{id} keeping a sealed secret', () => {
  it('answers the same 422 for a changed pattern, const or enum at the secret, whatever the guess, and stores nothing', async () => {
    const versions = await sealed.versionCount();
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
          const answer = await sealed.harness.api.as(errorBody)('PATCH', `/api/workflows/${sealed.id}`, body);
          expect(answer.status, JSON.stringify(answer.body)).toBe(422);
          reference ??= answer.body;
          expect(answer.body).toEqual(reference);
        },
      ),
      { numRuns: 30 },
    );
    expect(reference).toMatchObject({ detail: [{ loc: ['body', 'configuration', 'inputPayload', 'password'], type: 'secret_schema_changed' }] });
    expect(JSON.stringify(reference)).not.toContain('hunter');
    expect(await sealed.versionCount()).toBe(versions);
  });

  it('keeps the secret under the same schema (annotations aside), and takes a clear value under a new one', async () => {
    const kept = await sealed.harness.api.as(workflow)('PATCH', `/api/workflows/${sealed.id}`, { payloadSchema: { ...signIn, title: 'Sign in' }, configuration: { inputPayload: { user: 'ann', password: '{{password}}' } } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.current_version!.configuration.inputPayload).toEqual({ user: 'ann', password: '{{password}}' });
    const run = await sealed.harness.api.as(execution)('POST', `/api/workflows/${sealed.id}/execute`, {});
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    expect((await sealed.harness.queue.getJob(run.body.execution_uuid))?.data.inputPayload).toEqual({ user: 'ann', password: PASSWORD });

    // The caller who knows the value sends it again with the new schema.
    const resent = await sealed.harness.api.as(workflow)('PATCH', `/api/workflows/${sealed.id}`, { payloadSchema: withPassword({ pattern: '^new' }), configuration: { inputPayload: { user: 'ann', password: 'new-Pa55word' } } });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(resent.body.current_version!.configuration.inputPayload).toEqual({ user: 'ann', password: '{{password}}' });
  });
});
