import { notFound, sendJson } from './http-utils.js';
import type { RouteHandler, createRouter } from './router.js';
import type { VersionStatus } from './store.js';
import { presentVersions, type RouteDeps } from './workflow-routes.js';

/**
 * `POST /api/workflows/{id}/versions/{versionId}/publish` and `…/unpublish`: a version's status
 * changes in place (its content does not, so no new version is made). Only the current version
 * runs, so only its change starts or stops the workflow's schedule (docs/api.md#triggers).
 */

type Router = ReturnType<typeof createRouter>;

export function addPublishRoutes(router: Router, deps: Pick<RouteDeps, 'store' | 'schedules' | 'logger'>): void {
  const { store, schedules, logger } = deps;

  const setStatus = (status: VersionStatus): RouteHandler => async ({ res, params }) => {
    const id = params.id as string;
    const versionId = params.versionId as string;
    if (!(await store.getWorkflow(id))) throw notFound(['path', 'id'], 'workflow');
    const known = (await store.listVersions(id)).some((v) => v.workflow_version_uuid === versionId);
    if (!known || !(await store.setVersionStatus(versionId, status))) throw notFound(['path', 'versionId'], 'version');
    // Only the current version's change matters to the schedule; syncing always is as cheap.
    await schedules.sync(id);
    logger.info({ workflowId: id, versionId, status }, status === 'published' ? 'version published' : 'version unpublished');
    const after = (await store.listVersions(id)).find((v) => v.workflow_version_uuid === versionId);
    if (!after) throw notFound(['path', 'versionId'], 'version');
    const [shown] = await presentVersions(deps, id, after);
    sendJson(res, 200, shown);
  };

  router.add('POST', '/api/workflows/:id/versions/:versionId/publish', setStatus('published'));
  router.add('POST', '/api/workflows/:id/versions/:versionId/unpublish', setStatus('draft'));
}
