import { apiKeyCreate, apiKeyCreated, apiKeyList, type ApiKeyView } from '../contract/access.js';
import type { Logger } from '../telemetry/types.js';
import type { App } from './app.js';
import { identityOf, KEY_ONLY, KEY_OR_SESSION } from './access.js';
import { BOOTSTRAP_NAME, hashApiKey, newApiKey, newKeyRecord, storedKeyTag, type ApiKeyStore } from './api-keys.js';
import type { Auth } from './auth.js';
import { HttpError, notFound } from './http-errors.js';
import { answer, commonErrors, errorAnswer, notFoundAnswer, pathParams } from './openapi.js';

/**
 * API keys (docs/operations.md#api-keys), as the dashboard's Settings → API Keys shows them:
 *
 *   GET    /api/keys          every key: the `API_KEYS` entries (bootstrap) and the dashboard's
 *   POST   /api/keys          `{ name }` → 201 with the key, shown this once; needs a key
 *   DELETE /api/keys/{keyId}  revokes a dashboard key: refused at once, its sessions end → 204
 *
 * Making a key takes a key, as signing in does: a session (which a login link or a stolen
 * cookie also gives) may list and revoke keys but never mint one that would outlive it.
 */

export function addKeyRoutes(app: App, deps: { auth: Auth; keys: ApiKeyStore; logger: Logger }): void {
  const { auth, keys, logger } = deps;

  app.get('/api/keys', {
    config: KEY_OR_SESSION,
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
      ...auth.bootstrap.map((b, i) => ({ id: b.name, name: b.name, source: 'bootstrap' as const, created_at: null, last_used_at: used[i] ?? null, revocable: false, current: b.tag === own })),
      ...records.map((r, i) => ({
        id: r.id,
        name: r.name,
        source: 'dashboard' as const,
        created_at: r.created_at,
        last_used_at: used[auth.bootstrap.length + i] ?? null,
        revocable: true,
        current: storedKeyTag(r.id) === own,
      })),
    ];
    return { keys: views };
  });

  app.post('/api/keys', {
    config: KEY_ONLY,
    schema: {
      summary: 'Make a named API key: the answer holds the key, shown this once (only its hash is kept)',
      description: 'Takes an API key in X-Service-Key, not a dashboard session: a session cannot mint a key that outlives it.',
      body: apiKeyCreate,
      response: {
        201: answer('The key (`key`, shown once) and its listing.', apiKeyCreated),
        409: errorAnswer('A key with this name exists (names are unique whatever their case).'),
        ...commonErrors,
      },
    },
  }, async (request, reply) => {
    const { name } = request.body;
    if (BOOTSTRAP_NAME.test(name)) {
      throw new HttpError(422, [{ loc: ['body', 'name'], msg: '`bootstrap-<n>` names the keys of API_KEYS', type: 'reserved' }]);
    }
    const key = newApiKey();
    const record = newKeyRecord(name);
    if (!(await keys.add(record, hashApiKey(key)))) {
      throw new HttpError(409, [{ loc: ['body', 'name'], msg: `a key named "${name}" exists`, type: 'conflict' }]);
    }
    logger.info({ key: record.name, keyId: record.id, by: identityOf(request.credential) }, 'API key made');
    return reply.code(201).send({ ...record, source: 'dashboard', last_used_at: null, revocable: true, current: false, key });
  });

  app.delete('/api/keys/:keyId', {
    config: KEY_OR_SESSION,
    schema: {
      summary: 'Revoke a key made here: it is refused at once, and the sessions and login links it opened end',
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
    const removed = await keys.remove(keyId);
    if (!removed) throw notFound(['path', 'keyId'], 'key');
    logger.info({ key: removed.name, keyId: removed.id, by: identityOf(request.credential) }, 'API key revoked');
    return reply.code(204).send();
  });
}
