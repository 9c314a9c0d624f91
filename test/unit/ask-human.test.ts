import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAskHuman, humanTimeout } from '../../src/agent/ask-human.js';
import { runAgent } from '../../src/agent/loop.js';
import type { AgentInput } from '../../src/agent/types.js';
import { parseAnswer, parseInput } from '../../src/domain/human-protocol.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import type { ToolResultBlock } from '../../src/model/types.js';
import { createExecutionSignal } from '../../src/runner/deadline.js';
import { createComputerTool } from '../../src/toolset/computer-tool.js';
import { createDisplayGeometry } from '../../src/toolset/display.js';
import { createFakeSession } from '../support/fake-session.js';
import { heardEvents } from '../support/heard-events.js';
import { finish, scriptedModel, tool, type Turn } from '../support/scripted-model.js';
import type { HumanGate, HumanRequest } from '../../src/execution/human.js';
import { countEvents } from '../../src/execution/counters.js';
import type { HumanAnswer } from '../../src/contract/human.js';

/** `ask_human` in the loop with a gate that answers at once (the waiting itself is integration-tested). */
function setup(turns: Turn[], answers: Array<string | Partial<HumanAnswer>>, spec: Partial<AgentInput['spec']> = {}, offer = true) {
  const model = scriptedModel(turns);
  const session = createFakeSession({ allowed: () => true, width: 1280, height: 800 });
  const { events: sink, lines: events } = heardEvents();
  const asked: HumanRequest[] = [];
  const gate: HumanGate = {
    async ask(request) {
      asked.push(request);
      const answer = answers.shift();
      if (answer === undefined) throw humanTimeout(1_000);
      return typeof answer === 'string' ? { answer, decision: null, by: 'alice' } : { answer: answer.decision ?? '', decision: null, by: 'alice', ...answer };
    },
  };
  const vault = createSecretVault(null, undefined);
  const space = createComputerTool({ session, secrets: vault, allowJavascript: false, geometry: createDisplayGeometry(session.viewport), version: 'computer_20251124', beta: 'computer-use-2025-11-24', zoom: true });
  const human = createAskHuman({ gate, events: sink, view: (signal) => space.opening(signal), now: Date.now });
  const stats = countEvents(sink);
  const input: AgentInput = {
    spec: { prompt: 'Pay the invoice', allowedDomains: ['shop.test'], ...spec },
    modelId: 'claude-opus-4-7',
    vault,
    maxSteps: 10,
    startUrl: 'http://shop.test/',
    signal: new AbortController().signal,
  };
  const run = () => runAgent({ model, space, session, events: sink, ...(offer ? { human } : {}) }, input, stats);
  return { model, events, asked, human, stats, run };
}

const ask = (input: Record<string, unknown>) => tool('ask_human', input);
const lastResult = (req: { messages: Array<{ content: unknown[] }> }) => (req.messages.at(-1)!.content as ToolResultBlock[])[0]!;

describe('ask_human', () => {
  it('is offered with the approvals in the system prompt, and an approval granted lets the run complete', async () => {
    const t = setup([{ content: [ask({ question: 'Pay 120 EUR?', kind: 'approval', choices: ['approve', 'deny'] })] }, { content: [finish('completed', { output: { paid: true } })] }], ['approve'], { approvals: ['paying an invoice'] });
    expect(await t.run()).toEqual({ status: 'completed', output: { paid: true } });
    const first = t.model.requests[0]!;
    expect(first.tools.map((d) => ('name' in d ? d.name : d.type))).toEqual(['computer', 'navigate', 'ask_human', 'finish']);
    expect(first.system[0]!.text).toContain('- paying an invoice');
    expect(first.system[0]!.text).toContain('kind "approval"');
    expect(t.asked).toEqual([{ kind: 'approval', question: 'Pay 120 EUR?', choices: ['approve', 'deny'] }]);
    const result = lastResult(t.model.requests[1]!);
    expect(JSON.stringify(result.content)).toContain('alice answered: approve');
    expect(result.content.some((b) => b.type === 'image')).toBe(true);
    // A step, not an action; the fresh view counts as a screenshot.
    expect(t.stats).toMatchObject({ nSteps: 2, nAgentActions: 0, nScreenshots: 2 });
    expect(t.human.exchanges).toEqual([expect.objectContaining({ kind: 'approval', answer: 'approve', by: 'alice', answeredAt: expect.any(String) })]);
    expect(t.human.denied).toBe(false);
  });

  it('turns a failed finish after a refused approval into approval_denied', async () => {
    const t = setup([{ content: [ask({ question: 'Pay 120 EUR?', kind: 'approval' })] }, { content: [finish('failed', { reason: 'not approved' })] }], ['no, wait for Monday']);
    expect(await t.run()).toEqual({ status: 'failed', code: 'approval_denied', message: 'not approved' });
    expect(JSON.stringify(lastResult(t.model.requests[1]!).content)).toContain('This is not an approval');
  });

  it('reads an answer that starts with an approving word as a refusal', async () => {
    for (const said of ['OK, no - do not pay', 'approved', 'yes', 'approve, but only half', 'Go ahead? No.']) {
      const t = setup([{ content: [ask({ question: 'Pay 120 EUR?', kind: 'approval' })] }, { content: [finish('failed', { reason: 'not approved' })] }], [said]);
      expect(await t.run()).toMatchObject({ status: 'failed', code: 'approval_denied' });
      expect(t.human.denied).toBe(true);
      expect(JSON.stringify(lastResult(t.model.requests[1]!).content)).toContain('This is not an approval');
    }
  });

  it('grants on the approve decision whatever the text beside it, and refuses on deny', async () => {
    const granted = setup([{ content: [ask({ question: 'Pay 120 EUR?', kind: 'approval' })] }, { content: [finish('completed')] }], [{ answer: 'fine by me', decision: 'approve' }]);
    await granted.run();
    expect(granted.human.denied).toBe(false);
    const shown = JSON.stringify(lastResult(granted.model.requests[1]!).content);
    expect(shown).toContain('alice answered: fine by me (their choice: approve)');
    expect(shown).toContain('Approved: you may take the action.');

    const refused = setup([{ content: [ask({ question: 'Pay 120 EUR?', kind: 'approval' })] }, { content: [finish('failed', { reason: 'denied' })] }], [{ answer: 'approve', decision: 'deny' }]);
    expect(await refused.run()).toMatchObject({ status: 'failed', code: 'approval_denied' });
    expect(JSON.stringify(lastResult(refused.model.requests[1]!).content)).toContain('(their choice: deny)');
  });

  it('keeps agent_failed for a failed finish after a granted approval or a plain question', async () => {
    const t = setup([{ content: [ask({ question: 'Which address?' })] }, { content: [finish('failed', { reason: 'no such address' })] }], ['deny']);
    expect(await t.run()).toMatchObject({ status: 'failed', code: 'agent_failed' });
  });

  it('answers a malformed call with an error and asks nobody', async () => {
    const t = setup([{ content: [ask({ question: '', kind: 'chat' })] }, { content: [finish('completed')] }], []);
    await t.run();
    expect(t.asked).toHaveLength(0);
    expect(lastResult(t.model.requests[1]!).is_error).toBe(true);
  });

  it('fails the run with human_timeout when nobody answers', async () => {
    const t = setup([{ content: [ask({ question: 'Which address?' })] }], []);
    await expect(t.run()).rejects.toMatchObject({ code: 'human_timeout' });
    expect(t.human.exchanges).toEqual([expect.objectContaining({ answer: null, answeredAt: null })]);
  });

  it('is not offered without a person to ask: a call of it is an unknown tool', async () => {
    const t = setup([{ content: [ask({ question: 'May I?' })] }, { content: [finish('completed')] }], ['yes'], {}, false);
    await t.run();
    expect(t.model.requests[0]!.tools.map((d) => ('name' in d ? d.name : d.type))).not.toContain('ask_human');
    expect(t.model.requests[0]!.system[0]!.text).not.toContain('ask_human');
    expect(JSON.stringify(lastResult(t.model.requests[1]!).content)).toContain('unknown tool');
  });
});

describe('the answers stream entries', () => {
  it('reads answers and inputs, and nothing else', () => {
    expect(parseAnswer('{"answer":"approve","by":"alice"}')).toEqual({ answer: 'approve', decision: null, by: 'alice' });
    expect(parseAnswer('{"answer":"done"}')).toEqual({ answer: 'done', decision: null, by: null });
    expect(parseAnswer('{"answer":"too dear","decision":"deny"}')).toEqual({ answer: 'too dear', decision: 'deny', by: null });
    // A decision alone answers with its word.
    expect(parseAnswer('{"decision":"approve","by":"bob"}')).toEqual({ answer: 'approve', decision: 'approve', by: 'bob' });
    expect(parseAnswer('{"answer":"ok","decision":"yes"}')).toBeUndefined();
    expect(parseAnswer('{"answer":1}')).toBeUndefined();
    expect(parseAnswer('{}')).toBeUndefined();
    expect(parseAnswer('["approve"]')).toBeUndefined();
    expect(parseAnswer('approve')).toBeUndefined();
    expect(parseInput('{"kind":"click","x":0.5,"y":0.25}')).toEqual({ kind: 'click', x: 0.5, y: 0.25, button: 'left' });
    expect(parseInput('{"kind":"click","x":1.5,"y":0.25}')).toBeUndefined();
    expect(parseInput('{"kind":"wheel","x":0,"y":1,"deltaY":300}')).toEqual({ kind: 'wheel', x: 0, y: 1, deltaX: 0, deltaY: 300 });
    expect(parseInput('{"kind":"key","key":"Enter"}')).toEqual({ kind: 'key', key: 'Enter' });
    expect(parseInput('{"kind":"text","text":""}')).toBeUndefined();
    expect(parseInput('{"kind":"navigate","url":"https://elsewhere.test"}')).toBeUndefined();
  });
});

describe('the run deadline while a person is waited for', () => {
  afterEach(() => vi.useRealTimers());

  it('stops while paused and goes on with what was left', () => {
    vi.useFakeTimers();
    const run = createExecutionSignal(new AbortController().signal, 1_000);
    vi.advanceTimersByTime(400);
    const resume = run.pause();
    vi.advanceTimersByTime(60_000);
    expect(run.signal.aborted).toBe(false);
    resume();
    vi.advanceTimersByTime(599);
    expect(run.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(run.signal.aborted).toBe(true);
    expect(run.signal.reason).toMatchObject({ code: 'timeout' });
    run.dispose();
  });
});
