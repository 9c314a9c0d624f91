import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { startHarness, type Harness } from './local-api-harness.js';

/**
 * A kept secret is never compared with a value the caller sends beside it
 * (docs/security.md#secrets-at-rest), on the real local API and a real Redis: under the very
 * schema the secrets were stored under, an edit that keeps secret items of a `uniqueItems` array
 * by their placeholders and adds a guess is refused with the same 422 whatever the guess — equal
 * to a stored item or not — and stores nothing, also when the schema sent drops the items'
 * `writeOnly` mark (an annotation: the schema decides the same, and the codes stay secret).
 */

const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
const CODES = ['4821', '9901'];
const schema = { type: 'object', properties: { user: { type: 'string' }, backupCodes: { type: 'array', uniqueItems: true, items: { type: 'string', writeOnly: true } } } };

let k: Harness;
let id: string;
beforeAll(async () => {
  k = await startHarness({ inputKeys: keys });
  const created = await k.call('POST', '/api/workflows', { name: 'Sign in', prompt: 'Sign in', allowedDomains: ['shop.test'], payloadSchema: schema, configuration: { inputPayload: { user: 'kofi', backupCodes: CODES } } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body.current_version.configuration.inputPayload).toEqual({ user: 'kofi', backupCodes: ['{{backupCodes.0}}', '{{backupCodes.1}}'] });
  id = created.body.workflow_uuid as string;
});
afterAll(async () => {
  await k?.close();
});

const versionCount = async () => (await k.call('GET', `/api/workflows/${id}/versions`)).body.total as number;

describe('PATCH /api/workflows/{id} keeping secret items of a uniqueItems array under the same schema', () => {
  it('answers the same 422 whatever the guess beside them, right or wrong, and stores nothing', async () => {
    const versions = await versionCount();
    let reference: unknown;
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constantFrom(...CODES, '1111', '2222'), fc.stringMatching(/^[0-9]{4}$/)), fc.boolean(), async (guess, unmarked) => {
        const inputPayload = { user: 'kofi', backupCodes: ['{{backupCodes.0}}', '{{backupCodes.1}}', guess] };
        // Without its writeOnly mark (an annotation) the schema decides the same: the codes stay secret, and the rule holds.
        const payloadSchema = unmarked ? { ...schema, properties: { ...schema.properties, backupCodes: { type: 'array', uniqueItems: true, items: { type: 'string' } } } } : schema;
        const answer = await k.call('PATCH', `/api/workflows/${id}`, { payloadSchema, configuration: { inputPayload } });
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
    expect(await versionCount()).toBe(versions);
  });

  it('keeps the secrets when the edit sends no default input, and takes the array again in clear', async () => {
    const renamed = await k.call('PATCH', `/api/workflows/${id}`, { name: 'Sign in again' });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    const run = await k.call('POST', `/api/workflows/${id}/execute`, {});
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    expect((await k.queue.getJob(run.body.execution_uuid as string))?.data.inputPayload).toEqual({ user: 'kofi', backupCodes: CODES });

    const resent = await k.call('PATCH', `/api/workflows/${id}`, { payloadSchema: schema, configuration: { inputPayload: { user: 'kofi', backupCodes: [...CODES, '1111'] } } });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(resent.body.current_version.configuration.inputPayload).toEqual({ user: 'kofi', backupCodes: ['{{backupCodes.0}}', '{{backupCodes.1}}', '{{backupCodes.2}}'] });
  });
});
