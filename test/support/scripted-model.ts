import type { ModelClient, ModelTurnRequest, StopReason } from '../../src/model/types.js';
import type { AssistantBlock, BilledIteration, ModelResponse, TokenUsage, TurnNotes } from '../../src/contract/recording.js';

/** An in-memory ModelClient for unit tests: answers from a script, keeps every request. */
export interface ScriptedModel extends ModelClient {
  requests: ModelTurnRequest[];
}

export type Turn = { content: AssistantBlock[]; stopReason?: StopReason; notes?: TurnNotes; usage?: TokenUsage; billed?: BilledIteration[] } | Error;

export function scriptedModel(turns: Turn[]): ScriptedModel {
  const requests: ModelTurnRequest[] = [];
  let n = 0;
  return {
    requests,
    async createTurn(request, signal): Promise<ModelResponse> {
      signal.throwIfAborted();
      // Deep copy: the loop may build later requests from the same history.
      requests.push(structuredClone(request));
      const turn = turns[n++];
      if (!turn) throw new Error(`script has no turn ${n}`);
      if (turn instanceof Error) throw turn;
      const hasTool = turn.content.some((b) => b.type === 'tool_use');
      return {
        id: `msg_${n}`,
        model: request.model,
        content: turn.content,
        stopReason: turn.stopReason ?? (hasTool ? 'tool_use' : 'end_turn'),
        usage: turn.usage ?? { inputTokens: 100, outputTokens: 10, cacheReadInputTokens: 50, cacheCreationInputTokens: 5 },
        ...(turn.billed ? { billed: turn.billed } : {}),
        ...(turn.notes ? { notes: turn.notes } : {}),
      };
    },
  };
}

let ids = 0;
export const tool = (name: string, input: unknown): AssistantBlock => ({ type: 'tool_use', id: `toolu_${++ids}`, name, input });
export const computer = (action: string, params: Record<string, unknown> = {}) => tool('computer', { action, ...params });
export const finish = (status: 'completed' | 'failed', extra: Record<string, unknown> = {}) => tool('finish', { status, ...extra });
export const say = (text: string): AssistantBlock => ({ type: 'text', text });
