import { workflowVersion, type VersionStatus } from '../contract/workflows.js';
import type { App } from './app.js';
import { notFound } from './http-errors.js';
import { answer, commonErrors, notFoundAnswer, pathParams } from './openapi.js';
import { presentVersions, type RouteDeps } from './workflow-routes.js';
import { OPERATOR } from './access.js';

/**
 * `POST /api/workflows/{id}/versions/{versionId}/publish` and `…/unpublish`: a version's status
 * changes in place (its content does not, so no new version is made). Only the current version
 * runs, so only its change starts or stops the workflow's schedule (docs/api.md#triggers).
 */

const statusSchema = (summary: string) => ({
  summary,
  description: 'The version keeps its number and content; `updated_at` changes.',
  params: pathParams('id', 'versionId'),
  response: { 200: answer('The version after the change.', workflowVersion), 404: notFoundAnswer, ...commonErrors },
});

export function addPublishRoutes(app: App, deps: Pick<RouteDeps, 'store' | 'schedules' | 'logger'>): void {
  const { store, schedules, logger } = deps;

  const setStatus = async (id: string, versionId: string, status: VersionStatus) => {
    if (!(await store.getWorkflow(id))) throw notFound(['path', 'id'], 'workflow');
    const known = (await store.listVersions(id)).some((v) => v.workflow_version_uuid === versionId);
    if (!known || !(await store.setVersionStatus(versionId, status))) throw notFound(['path', 'versionId'], 'version');
    // Only the current version's change matters to the schedule; syncing always is as cheap.
    await schedules.sync(id);
    logger.info({ workflowId: id, versionId, status }, status === 'published' ? 'version published' : 'version unpublished');
    const after = (await store.listVersions(id)).find((v) => v.workflow_version_uuid === versionId);
    if (!after) throw notFound(['path', 'versionId'], 'version');
    const [shown] = await presentVersions(deps, id, after);
    return shown!;
  };

  app.post('/api/workflows/:id/versions/:versionId/publish', {
    schema: statusSchema('Publish a version in place: the current version, published, runs (and its schedule starts)'),
    config: OPERATOR,
  }, async ({ params }) => setStatus(params.id, params.versionId, 'published'));
  app.post('/api/workflows/:id/versions/:versionId/unpublish', {
    schema: statusSchema('Unpublish a version in place (it becomes a draft): the current version, a draft, is not executed and its schedule stops'),
    config: OPERATOR,
  }, async ({ params }) => setStatus(params.id, params.versionId, 'draft'));
}
