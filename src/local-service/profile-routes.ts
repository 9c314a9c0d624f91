import { profileIdProblem, profileList, type ProfileSummary } from '../contract/profile.js';
import type { App } from './app.js';
import { HttpError, notFound } from './http-errors.js';
import { answer, commonErrors, notFoundAnswer, pathParams } from './openapi.js';
import { OPERATOR } from './access.js';

/**
 * Browser profiles (docs/profiles.md) for operators: the list, without any value (id, hosts,
 * when it was saved, its size), and deletion. The service needs no key for either: it reads
 * the blobs' clear headers only.
 */

/** What the service needs of the profiles' store (wired by cli.ts). */
export interface ProfileDirectory {
  list(): Promise<ProfileSummary[]>;
  /** False when there was none. */
  delete(id: string): Promise<boolean>;
}

export function addProfileRoutes(app: App, profiles: ProfileDirectory | undefined): void {
  const directory = (): ProfileDirectory => {
    // No store has no profile: the one named is not found, said where every 404 says it.
    if (!profiles) throw new HttpError(404, [{ loc: ['path', 'profileId'], msg: 'profile not found: no profile store is configured', type: 'not_found' }]);
    return profiles;
  };

  app.get('/api/profiles', {
    config: OPERATOR,
    schema: {
      summary: "The workers' browser profiles, without any value (docs/profiles.md)",
      response: {
        200: answer('`{ "profiles": [...] }`: each id, the hosts its state is for, when it was last saved, its stored size.', profileList),
        ...commonErrors,
      },
    },
  }, async () => ({ profiles: profiles ? await profiles.list() : [] }));

  app.delete('/api/profiles/:profileId', {
    config: OPERATOR,
    schema: { summary: 'Delete a browser profile: the next run that names it signs in afresh', params: pathParams('profileId'), response: { 204: answer('Deleted.'), 404: notFoundAnswer, ...commonErrors } },
  }, async (request, reply) => {
    const { profileId: id } = request.params;
    if (profileIdProblem(id)) throw notFound(['path', 'profileId'], 'profile');
    if (!(await directory().delete(id))) throw notFound(['path', 'profileId'], 'profile');
    return reply.code(204).send();
  });
}
