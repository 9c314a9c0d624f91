import { schemas as requestSchemas } from './validation.js';
import { TRIGGER_FIELDS, triggerVersionProperties } from './version-triggers.js';

/**
 * The OpenAPI 3.1 document of the local API, served at `/openapi.json`. Request schemas are the
 * very ones the server validates with; response schemas describe what the handlers write.
 */

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });
const dateTime = { type: 'string', format: 'date-time' };
const nullableString = { type: ['string', 'null'] };

const errorResponse = (description: string) => ({ description, content: json(ref('ErrorBody')) });
const common = {
  '401': errorResponse('Missing or invalid X-Service-Key. Body: `{"detail":[{"loc":["header","X-Service-Key"],"msg":"missing or invalid API key","type":"unauthorized"}]}`.'),
  '422': errorResponse('Validation error: one `detail[]` entry per fault.'),
};
const notFound = errorResponse('Unknown id.');
const conflict = errorResponse('The execution cannot make this transition (for example, started twice or completed after failed).');

const pathParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });

/** A POST on one execution with a JSON body; `responses` beside 404 and the common ones. */
const executionPost = (summary: string, schema: string, description: string, responses: Record<string, unknown>) => ({
  post: {
    summary,
    description,
    parameters: [pathParam('execution_uuid')],
    requestBody: { required: true, content: json(ref(schema)) },
    responses: { ...responses, '404': notFound, ...common },
  },
});

const reportPath = (summary: string, schema: string, description: string) =>
  executionPost(summary, schema, description, { '200': { description: 'The execution after the transition.', content: json(ref('Execution')) }, '409': conflict });

const humanPath = (summary: string, schema: string, description: string) =>
  executionPost(summary, schema, description, { '202': { description: 'Taken: the worker reads it from the stream.' }, '409': errorResponse('The execution is not waiting for a person, or its question was already answered.') });

const versionStatusPath = (summary: string) => ({
  post: {
    summary,
    description: 'The version keeps its number and content; `updated_at` changes.',
    parameters: [pathParam('id'), pathParam('versionId')],
    responses: { '200': { description: 'The version after the change.', content: json(ref('WorkflowVersion')) }, '404': notFound, ...common },
  },
});

export function buildOpenApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Workflow Automation Service (local implementation)',
      version: '0.1.0',
      description:
        'Every endpoint of the service description plus the worker reports. Every error status answers `{ "detail": [{ "loc", "msg", "type" }] }`.',
    },
    components: {
      securitySchemes: { ServiceKey: { type: 'apiKey', in: 'header', name: 'X-Service-Key' } },
      schemas: {
        ...requestSchemas,
        ValidationError: {
          type: 'object',
          required: ['loc', 'msg', 'type'],
          properties: { loc: { type: 'array', items: { type: ['string', 'integer'] } }, msg: { type: 'string' }, type: { type: 'string' } },
        },
        ErrorBody: { type: 'object', properties: { detail: { type: 'array', items: ref('ValidationError') } } },
        Profile: {
          type: 'object',
          required: ['id', 'hosts', 'updated', 'size'],
          properties: { id: { type: 'string' }, hosts: { type: 'array', items: { type: 'string' } }, updated: dateTime, size: { type: 'integer', description: 'Bytes stored, encrypted.' } },
        },
        Specification: {
          type: 'object',
          description: 'The specification fields of docs/specification.md, camelCase (snake_case aliases accepted).',
          required: ['prompt', 'allowedDomains'],
          properties: Object.fromEntries(Object.entries(requestSchemas.WorkflowCreate.properties).filter(([k]) => k !== 'name' && k !== 'description' && !TRIGGER_FIELDS.includes(k))),
        },
        WorkflowVersion: {
          type: 'object',
          required: ['workflow_version_uuid', 'workflow_uuid', 'specification'],
          properties: {
            workflow_version_uuid: { type: 'string' },
            workflow_uuid: { type: 'string' },
            specification: ref('Specification'),
            created_at: dateTime,
            updated_at: dateTime,
            version: { type: 'integer' },
            is_current: { type: 'boolean' },
            ...triggerVersionProperties,
            name: { type: 'string', description: 'Workflow-level, not stored on the version.' },
            description: { type: 'string', description: 'Workflow-level, not stored on the version.' },
          },
        },
        Workflow: {
          type: 'object',
          required: ['workflow_uuid', 'name', 'description', 'slug', 'created_at', 'updated_at', 'current_version'],
          properties: {
            workflow_uuid: { type: 'string' },
            name: { type: 'string' },
            description: { type: 'string' },
            slug: { type: 'string', description: 'Unique; derived from the name.' },
            created_at: dateTime,
            updated_at: dateTime,
            current_version: ref('WorkflowVersion'),
          },
        },
        Execution: {
          type: 'object',
          required: ['execution_uuid', 'workflow_version_uuid', 'workflow_uuid', 'workflow_name', 'created_at', 'updated_at', 'status'],
          properties: {
            execution_uuid: { type: 'string' },
            workflow_version_uuid: { type: 'string' },
            workflow_uuid: { type: 'string' },
            workflow_name: { type: 'string' },
            version: { type: 'integer', description: 'Number of the version run.' },
            created_at: dateTime,
            updated_at: dateTime,
            status: { type: 'string', enum: ['queued', 'running', 'waiting', 'completed', 'failed'], description: 'queued → running → completed | failed; queued → failed; running ⇄ waiting while the agent waits for a person.' },
            trigger: { type: 'string', enum: ['manual', 'schedule'], description: 'What created it: an execute call, or its version\'s schedule.' },
            input_payload: { description: 'Any JSON value; null when none was given.' },
            duration_ms: { type: ['integer', 'null'], description: 'null until the run ends.' },
            n_steps: { type: 'integer' },
            n_agent_actions: { type: 'integer' },
            n_screenshots: { type: 'integer' },
            output_url: nullableString,
            video_url: nullableString,
            logs_url: nullableString,
            started_at: { type: ['string', 'null'], format: 'date-time' },
            completed_at: { type: ['string', 'null'], format: 'date-time' },
            failed_at: { type: ['string', 'null'], format: 'date-time' },
            error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
            waiting: {
              type: ['object', 'null'],
              description: 'While the status is waiting: what the agent asks a person.',
              properties: {
                kind: { type: 'string', enum: ['question', 'approval', 'takeover'] },
                question: { type: 'string' },
                choices: { type: ['array', 'null'], items: { type: 'string' } },
                waitingAt: dateTime,
                timeoutAt: { type: ['string', 'null'], format: 'date-time' },
              },
            },
            waiting_at: { type: ['string', 'null'], format: 'date-time', description: 'When the run last started waiting for a person.' },
            resumed_at: { type: ['string', 'null'], format: 'date-time', description: 'When a person last answered.' },
            answered_by: nullableString,
          },
        },
        WorkflowList: { type: 'object', required: ['items', 'total'], properties: { items: { type: 'array', items: ref('Workflow') }, total: { type: 'integer' } } },
        VersionList: { type: 'object', required: ['items', 'total'], properties: { items: { type: 'array', items: ref('WorkflowVersion') }, total: { type: 'integer' } } },
        ExecutionList: { type: 'object', required: ['items', 'total'], properties: { items: { type: 'array', items: ref('Execution') }, total: { type: 'integer' } } },
      },
    },
    security: [{ ServiceKey: [] }],
    paths: {
      '/api/workflows': {
        get: {
          summary: 'List workflows (newest first)',
          parameters: [
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
          ],
          responses: { '200': { description: 'A page of workflows; total counts all.', content: json(ref('WorkflowList')) }, ...common },
        },
        post: {
          summary: 'Create a workflow and publish version 1',
          requestBody: { required: true, content: json(ref('WorkflowCreate')) },
          responses: { '201': { description: 'The workflow with its current version (1).', content: json(ref('Workflow')) }, ...common },
        },
      },
      '/api/workflows/{id}': {
        get: { summary: 'One workflow', parameters: [pathParam('id')], responses: { '200': { description: 'The workflow.', content: json(ref('Workflow')) }, '404': notFound, ...common } },
        patch: {
          summary: 'Edit a workflow: creates a new current version; previous versions are kept',
          parameters: [pathParam('id')],
          requestBody: { required: true, content: json(ref('WorkflowUpdate')) },
          responses: { '200': { description: 'The workflow with its new current version.', content: json(ref('Workflow')) }, '404': notFound, ...common },
        },
        delete: {
          summary: 'Delete a workflow with all its versions and executions',
          parameters: [pathParam('id')],
          responses: { '204': { description: 'Deleted.' }, '404': notFound, ...common },
        },
      },
      '/api/workflows/{workflow_uuid}/versions': {
        get: {
          summary: 'List the versions of a workflow (ascending version number; the highest is current)',
          parameters: [pathParam('workflow_uuid')],
          responses: { '200': { description: 'Every version.', content: json(ref('VersionList')) }, '404': notFound, ...common },
        },
      },
      '/api/workflows/{id}/versions/{versionId}/cache': {
        delete: {
          summary: "Forget the version's run cache: its next execution runs with the model (and leaves a new cache)",
          parameters: [pathParam('id'), pathParam('versionId')],
          responses: {
            '200': { description: '`cleared`: whether there was a cache.', content: json({ type: 'object', required: ['cleared'], properties: { cleared: { type: 'boolean' } } }) },
            '404': notFound,
            ...common,
          },
        },
      },
      '/api/workflows/{id}/versions/{versionId}/publish': versionStatusPath('Publish a version in place: the current version, published, runs (and its schedule starts)'),
      '/api/workflows/{id}/versions/{versionId}/unpublish': versionStatusPath('Unpublish a version in place (it becomes a draft): the current version, a draft, is not executed and its schedule stops'),
      '/api/workflows/{workflowId}/execute': {
        post: {
          summary: 'Execute the current version: validates inputPayload, creates a queued execution and enqueues its job',
          description: "Without inputPayload the version's default input (`configuration.inputPayload`) is used. A current version that is a draft answers 422 (`type: version_draft`).",
          parameters: [pathParam('workflowId')],
          requestBody: { required: false, content: json(ref('ExecuteRequest')) },
          responses: {
            '201': { description: 'The queued execution.', content: json(ref('Execution')) },
            '404': notFound,
            '503': errorResponse('The queue could not be reached; the execution is recorded as failed.'),
            ...common,
          },
        },
      },
      '/api/executions': {
        get: {
          summary: 'List executions, newest first',
          parameters: [
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
            { name: 'workflow_uuid', in: 'query', schema: { type: 'string' }, description: 'Only executions of this workflow.' },
            { name: 'status', in: 'query', schema: { type: 'string', enum: ['queued', 'running', 'waiting', 'completed', 'failed'] } },
          ],
          responses: { '200': { description: 'A page; total counts every match.', content: json(ref('ExecutionList')) }, ...common },
        },
      },
      '/api/executions/{executionId}': {
        get: {
          summary: 'One execution (poll until completed or failed)',
          parameters: [pathParam('executionId')],
          responses: { '200': { description: 'The execution.', content: json(ref('Execution')) }, '404': notFound, ...common },
        },
      },
      '/api/session': {
        post: {
          summary: 'Sign the dashboard in: the key in X-Service-Key sets an HttpOnly session cookie (12 h)',
          responses: { '204': { description: 'Signed in; `Set-Cookie: ew_session=…`.' }, ...common },
        },
        get: { summary: 'How this request is signed in', responses: { '200': { description: '`{ "via": "key" | "session" }`.' }, ...common } },
        delete: { summary: 'Sign out: clears the session cookie', responses: { '204': { description: 'Signed out.' }, ...common } },
      },
      '/api/login-links': {
        post: {
          summary: 'A short-lived link that opens a dashboard page already signed in',
          description: 'The link (`/login?token=…`) sets the session cookie and opens `route`; it stops working after `ttlSeconds`.',
          requestBody: { required: false, content: json(ref('LoginLinkRequest')) },
          responses: {
            '201': { description: '`{ "url", "expires_at" }`.', content: json({ type: 'object', properties: { url: { type: 'string' }, expires_at: dateTime } }) },
            ...common,
          },
        },
      },
      '/api/profiles': {
        get: {
          summary: "The workers' browser profiles, without any value (docs/profiles.md)",
          responses: {
            '200': {
              description: '`{ "profiles": [...] }`: each id, the hosts its state is for, when it was last saved, its stored size.',
              content: json({ type: 'object', required: ['profiles'], properties: { profiles: { type: 'array', items: ref('Profile') } } }),
            },
            ...common,
          },
        },
      },
      '/api/profiles/{profileId}': {
        delete: {
          summary: 'Delete a browser profile: the next run that names it signs in afresh',
          parameters: [pathParam('profileId')],
          responses: { '204': { description: 'Deleted.' }, '404': notFound, ...common },
        },
      },
      '/live/executions/{executionId}': {
        get: {
          summary: 'Live view of a running execution (server-sent events; the dashboard reads it)',
          description:
            'Events: `frame` (a JPEG screen, base64, a few per second while the page changes), `events` (a JSON array of `{ seq, line }`: logs.jsonl lines; a line may come twice, keep one per seq), `end` (the run is over). Frames travel from the worker only while someone watches.',
          parameters: [pathParam('executionId')],
          responses: { '200': { description: 'The stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } }, '404': notFound, ...common },
        },
      },
      '/api/executions/{execution_uuid}/started': reportPath('Mark an execution started', 'StartedReport', 'queued → running. Repeating it with the same startedAt answers 200 unchanged.'),
      '/api/executions/{execution_uuid}/completed': reportPath('Report a completed run', 'CompletedReport', 'running → completed. Repeating it with the same completedAt answers 200 unchanged.'),
      '/api/executions/{execution_uuid}/failed': reportPath('Report a failed run', 'FailedReport', 'queued | running | waiting → failed. Repeating it with the same failedAt answers 200 unchanged.'),
      '/api/executions/{execution_uuid}/waiting': reportPath('Report that the run waits for a person', 'WaitingReport', 'running → waiting, with the question. Repeating it with the same waitingAt answers 200 unchanged.'),
      '/api/executions/{execution_uuid}/resumed': reportPath('Report that a person answered', 'ResumedReport', 'waiting → running. Repeating it with the same resumedAt answers 200 unchanged.'),
      '/api/executions/{execution_uuid}/answer': humanPath('Answer the question of a waiting execution', 'AnswerRequest', "Written to the execution's answers stream for the worker. The first answer to a question is taken; another answers 409, as does an execution that is not waiting."),
      '/api/executions/{execution_uuid}/input': humanPath("A person's input for the page of a waiting execution (takeover)", 'LiveInput', "A click, pointer move, wheel, key or text, passed to the execution's page in the order sent. Typed text is never logged. 409 unless the execution waits."),
    },
  };
}
