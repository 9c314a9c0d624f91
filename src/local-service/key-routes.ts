import { apiKeyCreate, apiKeyCreated, apiKeyList, type ApiKeyView } from '../contract/access.js';
import type { Logger } from '../telemetry/types.js';
import type { App } from './app.js';
import { identityOf, OPERATOR } from './access.js';
import { BOOTSTRAP_NAME, hashApiKey, newApiKey, newKeyRecord, STORED_TAG, storedKeyTag, type ApiKeyStore } from './api-keys.js';
import { BOOTSTRAP_ROLES, type Auth } from './auth.js';
import { HttpError, notFound } from './http-errors.js';
import { answer, commonErrors, errorAnswer, notFoundAnswer, pathParams } from './openapi.js';

/**
 * API keys (docs/operations.md#api-keys), as the dashboard's Settings → API Keys shows them:
 *
 *   GET    /api/keys          every key: the `API_KEYS` entries (bootstrap) and the dashboard's
 *   POST   /api/keys          `{ name, role? }` → 201 with the key, shown this once; an operator's
 *                             key or a dashboard session
 *   DELETE /api/keys/{keyId}  revokes a dashboard key and every key made with it, transitively:
 *                             refused at once, their sessions end → 204
 *
 * A key records what made it (`created_by`); it is honoured only while that key is (auth.ts).
 * A session may make a key: it is recorded as made by the key that signed the session in, so
 * the new key lives only while that key does (revoking it revokes this one, at once). It may
 * outlive the session itself; that is what a person signed in to the dashboard asks for.
 */

export function addKeyRoutes(app: App, deps: { auth: Auth; keys: ApiKeyStore; logger: Logger }): void {
  const { auth, keys, logger } = deps;

  app.get('/api/keys', {
    config: OPERATOR,
    schema: {
      summary: 'Every API key: the bootstrap keys of API_KEYS and the keys made here, with their last use; never a key itself',
      response: { 200: answer('`{ "keys": [...] }`, bootstrap keys first, then by creation.', apiKeyList), ...commonErrors },
    },
  }, async (request) => {
    const records = await keys.list();
    const tags = [...auth.bootstrap.map((b) => b.tag), ...records.map((r) => storedKeyTag(r.id))];
    const used = await keys.lastUsed(tags);
    const own = request.credential.kind === 'none' ? undefined : request.credential.keyTag;
    const views: ApiKeyView[] = [
      ...auth.bootstrap.map((b, i) => ({ id: b.name, name: b.name, source: 'bootstrap' as const, roles: [...BOOTSTRAP_ROLES], created_by: null, created_at: null, last_used_at: used[i] ?? null, revocable: false, current: b.tag === own })),
      ...records.map((r, i) => ({
        id: r.id,
        name: r.name,
        source: 'dashboard' as const,
        roles: [r.role],
        created_by: r.created_by,
        created_at: r.created_at,
        last_used_at: used[auth.bootstrap.length + i] ?? null,
        revocable: true,
        current: storedKeyTag(r.id) === own,
      })),
    ];
    return { keys: views };
  });

  app.post('/api/keys', {
    config: OPERATOR,
    schema: {
      summary: 'Make a named API key: the answer holds the key, shown this once (only its hash is kept)',
      description: 'Takes an operator key in X-Service-Key or a dashboard session. The new key is recorded as made by the key (for a session: the key that signed it in), so revoking that key revokes this one too.',
      body: apiKeyCreate,
      response: {
        201: answer('The key (`key`, shown once) and its listing.', apiKeyCreated),
        409: errorAnswer('A key with this name exists (names are unique whatever their case).'),
        ...commonErrors,
      },
    },
  }, async (request, reply) => {
    const { name, role = 'operator' } = request.body;
    const { credential } = request;
    // The access check let in an operator's key or a session (OPERATOR); anything else makes nothing.
    // A session's key is the key that signed it in: what the session makes is that key's, and goes with it.
    if (credential.kind === 'none') throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'making a key needs an API key', type: 'unauthorized' }]);
    if (BOOTSTRAP_NAME.test(name)) {
      throw new HttpError(422, [{ loc: ['body', 'name'], msg: '`bootstrap-<n>` names the keys of API_KEYS', type: 'reserved' }]);
    }
    const key = newApiKey();
    // What made it: a dashboard key by its id, a bootstrap key by its name.
    const makerId = STORED_TAG.exec(credential.keyTag)?.[1];
    const record = newKeyRecord(name, role, { tag: credential.keyTag, shown: makerId ?? credential.identity });
    const added = await keys.add(record, hashApiKey(key));
    if (added === 'taken') throw new HttpError(409, [{ loc: ['body', 'name'], msg: `a key named "${name}" exists`, type: 'conflict' }]);
    // Revoked between the access check and now: it makes nothing.
    if (added === 'maker_gone') throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }]);
    logger.info({ key: record.name, keyId: record.id, role, createdBy: record.created_by, by: identityOf(credential) }, 'API key made');
    return reply
      .code(201)
      .send({ id: record.id, name: record.name, source: 'dashboard', roles: [record.role], created_by: record.created_by, created_at: record.created_at, last_used_at: null, revocable: true, current: false, key });
  });

  app.delete('/api/keys/:keyId', {
    config: OPERATOR,
    schema: {
      summary: 'Revoke a key made here and every key made with it (transitively): they are refused at once, and the sessions and login links they opened end',
      params: pathParams('keyId'),
      response: {
        204: answer('Revoked.'),
        404: notFoundAnswer,
        409: errorAnswer('A bootstrap key (from API_KEYS): remove it there and restart the service.'),
        ...commonErrors,
      },
    },
  }, async (request, reply) => {
    const { keyId } = request.params;
    if (auth.bootstrap.some((b) => b.name === keyId)) {
      throw new HttpError(409, [{ loc: ['path', 'keyId'], msg: 'a key of API_KEYS is revoked by taking it out of API_KEYS and restarting', type: 'bootstrap_key' }]);
    }
    const removed = await keys.removeTree(keyId);
    if (removed.length === 0) throw notFound(['path', 'keyId'], 'key');
    for (const gone of removed) logger.info({ key: gone.name, keyId: gone.id, ...(gone.id === keyId ? {} : { madeWith: keyId }), by: identityOf(request.credential) }, 'API key revoked');
    return reply.code(204).send();
  });
}
