import { workflowVersion, type VersionStatus } from '../contract/workflows.js';
import type { App } from './app.js';
import { notFound } from './http-errors.js';
import { answer, commonErrors, notFoundAnswer, pathParams } from './openapi.js';
import { presentVersions, type RouteDeps } from './workflow-routes.js';
import { OPERATOR } from './access.js';

/**
 * `POST /api/workflows/{id}/versions/{versionId}/publish` and `…/unpublish`: a version's status
 * changes in place (its content does not, so no new version is made). The newest published
 * version runs by default and on its schedule, so a change can move the schedule to another
 * version (docs/api.md#versions).
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
    // The change may move the default version, and its schedule with it.
    await schedules.sync(id);
    logger.info({ workflowId: id, versionId, status }, status === 'published' ? 'version published' : 'version unpublished');
    const after = (await store.listVersions(id)).find((v) => v.workflow_version_uuid === versionId);
    if (!after) throw notFound(['path', 'versionId'], 'version');
    const [shown] = await presentVersions(deps, id, after);
    return shown!;
  };

  app.post('/api/workflows/:id/versions/:versionId/publish', {
    schema: statusSchema('Publish a version in place: the newest published version runs by default (and on its schedule)'),
    config: OPERATOR,
  }, async ({ params }) => setStatus(params.id, params.versionId, 'published'));
  app.post('/api/workflows/:id/versions/:versionId/unpublish', {
    schema: statusSchema('Unpublish a version in place (it becomes a draft): it runs only when named; the newest published version before it, if any, runs by default'),
    config: OPERATOR,
  }, async ({ params }) => setStatus(params.id, params.versionId, 'draft'));
}
