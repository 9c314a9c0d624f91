import { profileIdProblem } from '../domain/profile-crypto.js';
import { HttpError, notFound, sendJson } from './http-utils.js';
import type { createRouter } from './router.js';

/**
 * Browser profiles (docs/profiles.md) for operators: the list, without any value (id, hosts,
 * when it was saved, its size), and deletion. The service needs no key for either: it reads
 * the blobs' clear headers only.
 */

type Router = ReturnType<typeof createRouter>;

export interface ProfileSummary {
  id: string;
  /** Hosts the saved state has cookies or storage for. */
  hosts: string[];
  /** ISO time of the last save. */
  updated: string;
  /** Bytes stored (encrypted). */
  size: number;
}

/** What the service needs of the profiles' store (wired by cli.ts). */
export interface ProfileDirectory {
  list(): Promise<ProfileSummary[]>;
  /** False when there was none. */
  delete(id: string): Promise<boolean>;
}

export function addProfileRoutes(router: Router, profiles: ProfileDirectory | undefined): void {
  const directory = (): ProfileDirectory => {
    if (!profiles) throw new HttpError(404, [{ loc: ['path'], msg: 'no profile store is configured', type: 'not_found' }]);
    return profiles;
  };

  router.add('GET', '/api/profiles', async ({ res }) => {
    sendJson(res, 200, { profiles: profiles ? await profiles.list() : [] });
  });

  router.add('DELETE', '/api/profiles/:profileId', async ({ res, params }) => {
    const id = params.profileId as string;
    if (profileIdProblem(id)) throw notFound(['path', 'profileId'], 'profile');
    if (!(await directory().delete(id))) throw notFound(['path', 'profileId'], 'profile');
    res.writeHead(204).end();
  });
}
