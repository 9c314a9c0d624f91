// The API's answers as the dashboard reads them: the contract's z.infer types (src/contract/),
// imported as types only, so none of the contract's code (zod, Node's modules) reaches the bundle.

import type { z } from 'zod';
import type { apiKeyCreated, apiKeyList, sessionInfo } from '../../contract/access.js';
import type { executionList } from '../../contract/executions.js';
import type { profileList } from '../../contract/profile.js';
import type { deliveryList, webhookCreated, webhookList } from '../../contract/webhooks.js';
import type { versionList, workflowList } from '../../contract/workflows.js';

export type { ExecutionRow } from '../../contract/executions.js';
export type { Workflow, WorkflowVersion } from '../../contract/workflows.js';
export type { Specification } from '../../contract/specification.js';
export type { ApiKeyView } from '../../contract/access.js';
export type { DeliveryRow, WebhookRow } from '../../contract/webhooks.js';
export type { ProfileSummary } from '../../contract/profile.js';
export type { OutputDocument } from '../../contract/output.js';
export type { RunCacheView } from '../../contract/run-cache-view.js';

export type WorkflowList = z.infer<typeof workflowList>;
export type VersionList = z.infer<typeof versionList>;
export type ExecutionList = z.infer<typeof executionList>;
export type ApiKeyList = z.infer<typeof apiKeyList>;
export type ApiKeyCreated = z.infer<typeof apiKeyCreated>;
export type SessionInfo = z.infer<typeof sessionInfo>;
export type WebhookList = z.infer<typeof webhookList>;
export type WebhookCreated = z.infer<typeof webhookCreated>;
export type DeliveryList = z.infer<typeof deliveryList>;
export type ProfileList = z.infer<typeof profileList>;
