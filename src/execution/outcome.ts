import type { ErrorCode } from '../contract/errors.js';

/** How a run of the model (or a replay that handed over to it) ended: its output, or why it failed. */
export type AgentOutcome = { status: 'completed'; output: unknown } | { status: 'failed'; code: ErrorCode; message: string };
