import { finish, type ScriptedTurn } from '../scripted-model-server.js';

/**
 * What the scripted agents of block-editor-agent.ts and django-admin-agent.ts keep of their
 * turns: `note(kind, reply)` logs what a turn does and hands back its reply; `count()` is the
 * reply of a run past `maxTurns` (it gives up), else undefined.
 */
export function turnLog(turns: string[], maxTurns: number): { note: (kind: string, reply: ScriptedTurn) => ScriptedTurn; count: () => ScriptedTurn | undefined } {
  let taken = 0;
  return {
    note(kind, reply) {
      turns.push(kind);
      return reply;
    },
    count: () => (++taken > maxTurns ? finish('failed', undefined, `gave up after ${maxTurns} turns`) : undefined),
  };
}
