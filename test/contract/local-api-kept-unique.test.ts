import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import { useSealedWorkflow } from './local-api-sealed-workflow.js';

/**
 * A kept secret is never compared with a value the caller sends beside it
 * (docs/security.md#secrets-at-rest), on the real local API and a real Redis: under the very
 * schema the secrets were stored under, an edit that keeps secret items of a `uniqueItems` array
 * by their placeholders and adds a guess is refused with the same 422 whatever the guess — equal
 * to a stored item or not — and stores nothing, also when the schema sent drops the items'
 * `writeOnly` mark (an annotation: the schema decides the same, and the codes stay secret).
 */

const CODES = ['4821', '9901'];
const schema = { type: 'object', properties: { user: { type: 'string' }, backupCodes: { type: 'array', uniqueItems: true, items: { type: 'string', writeOnly: true } } } };

const sealed = useSealedWorkflow({ name: 'Sign in', prompt: 'Sign in', allowedDomains: ['shop.test'], payloadSchema: schema, configuration: { inputPayload: { user: 'kofi', backupCodes: CODES } } });
beforeAll(() => {
  expect(sealed.created.current_version!.configuration.inputPayload).toEqual({ user: 'kofi', backupCodes: ['{{backupCodes.0}}', '{{backupCodes.1}}'] });
});

describe('PATCH /api/workflows/{id} keeping secret items of a uniqueItems array under the same schema', () => {
  it('answers the same 422 whatever the guess beside them, right or wrong, and stores nothing', async () => {
    const versions = await sealed.versionCount();
    let reference: unknown;
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constantFrom(...CODES, '1111', '2222'), fc.stringMatching(/^[0-9]{4}$/)), fc.boolean(), async (guess, unmarked) => {
        const inputPayload = { user: 'kofi', backupCodes: ['{{backupCodes.0}}', '{{backupCodes.1}}', guess] };
        // Without its writeOnly mark (an annotation) the schema decides the same: the codes stay secret, and the rule holds.
        const payloadSchema = unmarked ? { ...schema, properties: { ...schema.properties, backupCodes: { type: 'array', uniqueItems: true, items: { type: 'string' } } } } : schema;
        const answer = await sealed.harness.api.as(errorBody)('PATCH', `/api/workflows/${sealed.id}`, { payloadSchema, configuration: { inputPayload } });
        expect(answer.status, JSON.stringify(answer.body)).toBe(422);
        reference ??= answer.body;
        expect(answer.body).toEqual(reference);
      }),
      { numRuns: 40 },
    );
    expect(reference).toMatchObject({
      detail: [
        { loc: ['body', 'configuration', 'inputPayload', 'backupCodes', '0'], type: 'secret_compared' },
        { loc: ['body', 'configuration', 'inputPayload', 'backupCodes', '1'], type: 'secret_compared' },
      ],
    });
    for (const code of CODES) expect(JSON.stringify(reference)).not.toContain(code);
    expect(await sealed.versionCount()).toBe(versions);
  });

  it('keeps the secrets when the edit sends no default input, and takes the array again in clear', async () => {
    const renamed = await sealed.harness.api.as(workflow)('PATCH', `/api/workflows/${sealed.id}`, { name: 'Sign in again' });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    const run = await sealed.harness.api.as(execution)('POST', `/api/workflows/${sealed.id}/execute`, {});
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    expect((await sealed.harness.queue.getJob(run.body.execution_uuid))?.data.inputPayload).toEqual({ user: 'kofi', backupCodes: CODES });

    const resent = await sealed.harness.api.as(workflow)('PATCH', `/api/workflows/${sealed.id}`, { payloadSchema: schema, configuration: { inputPayload: { user: 'kofi', backupCodes: [...CODES, '1111'] } } });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(resent.body.current_version!.configuration.inputPayload).toEqual({ user: 'kofi', backupCodes: ['{{backupCodes.0}}', '{{backupCodes.1}}', '{{backupCodes.2}}'] });
  });
});
