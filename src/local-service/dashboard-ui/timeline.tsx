// The steps of an execution, built from its logs.jsonl lines: for each step, the screen the model
// saw (step_screenshot), what it said and asked (model_turn), what was done (action), requests
// refused meanwhile (blocked) and errors; for a step that repaired a cached one (step_repair),
// what the earlier run did there and what the repair did instead. Lines are read by their fields, not by tool or action
// names, so every toolset shows the same way. `t` is ms since the start: the video's time.

import type { TargetedKeyboardEvent } from 'preact';
import { artifactUrl, fmtClock, fmtCount, fmtMs } from './dom.js';

/**
 * A line of logs.jsonl as the timeline reads it: the fields it uses, each checked where it is
 * read (a line is the worker's, not the API's: docs/counters-and-artifacts.md#logsjsonl).
 */
export interface LogLine {
  type?: string;
  step?: number;
  t?: number;
  by?: string;
  text?: string;
  usage?: Usage;
  latencyMs?: number;
  stopReason?: string;
  key?: string;
  label?: string;
  action?: string;
  tool?: string;
  input?: unknown;
  ok?: boolean;
  error?: string;
  durationMs?: number;
  message?: string;
  /** resource_limit_reached: what was held, past which ceiling. */
  detail?: string;
  errors?: unknown;
  url?: string;
  layer?: string;
  reason?: string;
  kind?: string;
  question?: string;
  target?: string | { x: number; y: number };
  answeredBy?: string;
  waitedMs?: number;
  cachedStep?: number;
  before?: string[];
  after?: string[];
  notEntered?: string[];
  outcome?: string;
  resumedAtStep?: number;
  note?: string;
}

interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheCreationInputTokens?: number;
}

export interface Step {
  step: number;
  t: number;
  text: string;
  usage?: Usage;
  latencyMs?: number;
  by?: string;
  repair?: LogLine;
  shots: LogLine[];
  actions: LogLine[];
  blocked: LogLine[];
  errors: string[];
  human: LogLine[];
}

/** A person in the loop: the question, their input and the answer, shown in the step that asked. */
const HUMAN_LINES = ['waiting', 'human_input', 'resumed', 'human_timeout'];

/** Lines that belong to the step running when they happen. */
const DURING_STEP = new Set(['blocked', 'error', 'browser_crashed', 'output_invalid', 'resource_limit_reached', 'finish', ...HUMAN_LINES]);

export function buildSteps(lines: LogLine[]): Step[] {
  const byNumber = new Map<number, Omit<Step, 't'> & { t?: number }>();
  const step = (n: number) => {
    let s = byNumber.get(n);
    if (!s) {
      s = { step: n, t: undefined, text: '', shots: [], actions: [], blocked: [], errors: [], human: [] };
      byNumber.set(n, s);
    }
    return s;
  };
  const pending: LogLine[] = [];
  for (const line of lines) {
    const n = Number.isInteger(line.step) ? line.step : undefined;
    if (line.by === 'cache' || line.by === 'model' || line.by === 'repair') if (n !== undefined) step(n).by ??= line.by;
    if (line.type === 'model_turn' && n !== undefined) {
      const s = step(n);
      s.t = line.t;
      s.text = line.text ?? '';
      s.usage = line.usage;
      s.latencyMs = line.latencyMs;
    } else if (line.type === 'action' && n !== undefined) {
      step(n).actions.push(line);
    } else if (line.type === 'step_screenshot' && n !== undefined && typeof line.key === 'string') {
      step(n).shots.push(line);
    } else if (line.type === 'step_repair' && n !== undefined) {
      step(n).repair = line;
    } else if (line.type !== undefined && DURING_STEP.has(line.type)) {
      pending.push(line);
    }
  }
  // A step replayed from a run cache has no model turn: it starts with its first action.
  const steps: Step[] = [...byNumber.values()].sort((a, b) => a.step - b.step).map((s) => ({ ...s, t: s.t ?? s.actions[0]?.t ?? s.shots[0]?.t ?? 0 }));
  // Refusals and errors go to the step under way when they happened (the first, if earlier).
  for (const line of pending) {
    let owner = steps[0];
    for (const s of steps) if (s.t <= (line.t ?? 0)) owner = s;
    if (!owner) continue;
    if (line.type === 'blocked') owner.blocked.push(line);
    else if (HUMAN_LINES.includes(line.type ?? '')) owner.human.push(line);
    else if (line.type === 'resource_limit_reached') owner.errors.push(`Ended: ${line.detail ?? 'a resource ceiling was passed'}`);
    else if (line.type !== 'finish') owner.errors.push(String(line.message ?? line.errors ?? line.type));
  }
  return steps;
}

function actionText(a: LogLine): string {
  if (a.label) return a.label;
  const name = a.action ?? a.tool ?? 'action';
  const input = a.input && typeof a.input === 'object' ? Object.entries(a.input).filter(([k]) => k !== 'action') : [];
  const args = input.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
  return args ? `${name} (${args.length > 120 ? `${args.slice(0, 119)}…` : args})` : name;
}

function tokens(usage: Usage | undefined) {
  if (!usage) return undefined;
  const cached = (usage.cacheReadInputTokens ?? 0) + (usage.cacheCreationInputTokens ?? 0);
  const input = (usage.inputTokens ?? 0) + cached;
  return `${fmtCount(input)} in${cached ? ` (${fmtCount(usage.cacheReadInputTokens ?? 0)} cached)` : ''} · ${fmtCount(usage.outputTokens ?? 0)} out`;
}

export interface TimelineProps {
  steps: Step[];
  /** Set: thumbnails come from the artifacts (a finished run); unset: a live run, whose screenshots are not uploaded yet. */
  executionId?: string;
  failedStep?: number;
  failure?: string;
  /** The step marked as the one the video shows. */
  current?: number;
  /** Runs on a click (or Enter, Space) on a step. */
  onPick?: (step: Step) => void;
}

/** The timeline's list. */
export function Timeline({ steps, executionId, failedStep, failure, current, onPick }: TimelineProps) {
  if (steps.length === 0) return <p class="muted" data-testid="no-steps">No step yet.</p>;
  let seen: LogLine | undefined;
  return (
    <ol class="timeline" data-testid="timeline">
      {steps.map((s) => {
        const failed = failedStep === s.step;
        const actionTime = s.actions.reduce((sum, a) => sum + (a.durationMs ?? 0), 0);
        // What the model saw at this step: the newest of the step's screenshots (a request may
        // carry several, the oldest taken before the previous step's last action). No new
        // screenshot at this step (the last action failed): the model still had the last one.
        const own = s.shots[s.shots.length - 1];
        const shot = own ?? seen;
        const reused = own === undefined && shot !== undefined;
        seen = own ?? seen;
        const meta = [s.latencyMs !== undefined ? `model ${fmtMs(s.latencyMs)}` : null, s.actions.length ? `actions ${fmtMs(actionTime)}` : null, tokens(s.usage)].filter(Boolean).join(' · ');
        const isCurrent = current === s.step;
        const keydown = (e: TargetedKeyboardEvent<HTMLLIElement>) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            onPick?.(s);
          }
        };
        return (
          <li
            key={s.step}
            class={`step${failed ? ' failed' : ''}${isCurrent ? ' current' : ''}`}
            aria-current={isCurrent ? 'step' : undefined}
            data-testid="step"
            data-step={s.step}
            data-t={s.t}
            tabindex={0}
            title="Show this moment in the video"
            onClick={() => onPick?.(s)}
            onKeyDown={keydown}
          >
            {executionId && shot?.key ? (
              <img
                class={reused ? 'thumb reused' : 'thumb'}
                data-testid="step-thumb"
                loading="lazy"
                // A picture of an earlier step is named as such: it is not what this step showed.
                alt={reused ? `No new picture at step ${s.step}: the last one, from step ${shot.step}` : `What the model saw at step ${s.step}`}
                data-shot-step={shot.step}
                title={reused ? `No new screenshot at this step: the model still had step ${shot.step}'s` : undefined}
                src={artifactUrl(executionId, shot.key)}
              />
            ) : (
              <div class="thumb empty">{executionId ? 'no screenshot' : 'live'}</div>
            )}
            <div class="step-body">
              <div class="step-title">
                <strong>{`Step ${s.step}`}</strong>
                <span class="muted">{fmtClock(s.t)}</span>
                {s.by ? <span class={`tag ${s.by}`} data-testid="step-by">{BY_TAGS[s.by] ?? s.by}</span> : null}
                {s.blocked.length ? <span class="tag blocked">{`${s.blocked.length} blocked`}</span> : null}
                {s.shots.length > 1 ? <span class="muted">{`${s.shots.length} screenshots`}</span> : null}
              </div>
              {s.text ? <p class="step-text" data-testid="step-text">{s.text}</p> : null}
              {!executionId && s.latencyMs === undefined && s.actions.length === 0 ? <p class="muted">The model is looking at this screen…</p> : null}
              {s.actions.length ? (
                <ul class="actions">
                  {s.actions.map((a) => (
                    <li class={a.ok === false ? 'action failed' : 'action'} data-testid="step-action">
                      {actionText(a)}
                      {a.ok === false && a.error ? <span class="error">{` — ${a.error}`}</span> : null}
                    </li>
                  ))}
                </ul>
              ) : null}
              {s.repair ? <RepairView line={s.repair} /> : null}
              {s.human.length ? <ul class="actions">{s.human.map((line) => <li class="human-line" data-testid="step-human">{humanText(line)}</li>)}</ul> : null}
              {s.blocked.length ? (
                <ul class="actions">
                  {groupBlocked(s.blocked).map(({ line, count }) => (
                    <li class="blocked" data-testid="step-blocked"><strong>{count > 1 ? `blocked ×${count} ` : 'blocked '}</strong>{`${line.url} (${line.layer}): ${line.reason}`}</li>
                  ))}
                </ul>
              ) : null}
              {s.errors.map((m) => <p class="error">{m}</p>)}
              {failed && failure ? <p class="error" data-testid="step-error">{failure}</p> : null}
              {meta ? <div class="step-meta muted">{meta}</div> : null}
            </div>
          </li>
        );
      })}
    </ol>
  );
}

const BY_TAGS: Record<string, string> = { cache: 'from cache', model: 'model', repair: 'repair' };

/**
 * A repaired cached step (docs/run-cache.md#repair-not-restart): the step of the earlier run that
 * no longer fit the page and why, what the earlier run did there, what the repair did instead,
 * and where the replay went on — or why the model took the run over.
 */
function RepairView({ line }: { line: LogLine }) {
  const list = (items: string[] | undefined) => (items?.length ? <ul class="actions">{items.map((item) => <li class="action">{item}</li>)}</ul> : <p class="muted">nothing</p>);
  const ended =
    line.outcome === 'resumed'
      ? line.resumedAtStep
        ? `The replay went on at the earlier run's step ${line.resumedAtStep}.`
        : 'The replay went on to the final check.'
      : line.outcome === 'flow_changed'
        ? `The flow has changed${line.note ? `: ${line.note}` : ''}. The model took the run over.`
        : `The repair did not lead back to the earlier run's steps${line.note ? ` (${line.note})` : ''}. The model took the run over.`;
  return (
    <div class="repair-view" data-testid="step-repair">
      <p><strong>{`Repair of the earlier run's step ${line.cachedStep}`}</strong>{` — ${line.reason}`}</p>
      <div class="repair-before" data-testid="repair-before"><span class="muted">Before (the earlier run):</span>{list(line.before)}</div>
      <div class="repair-after" data-testid="repair-after"><span class="muted">After (the repair):</span>{list(line.after)}</div>
      {line.notEntered?.length ? <p class="muted">{`Not entered (the pages no longer ask for them): ${line.notEntered.join(', ')}`}</p> : null}
      <p class={line.outcome === 'resumed' ? 'muted' : 'warning'} data-testid="repair-outcome">{ended}</p>
    </div>
  );
}

function humanText(line: LogLine): string {
  if (line.type === 'waiting') return `asked a person (${line.kind}): ${line.question}`;
  if (line.type === 'human_input') return `person: ${line.kind}${typeof line.target === 'string' ? ` ${line.target}` : line.target ? ` (${line.target.x}, ${line.target.y})` : ''}`;
  if (line.type === 'resumed') return `answered${line.answeredBy ? ` by ${line.answeredBy}` : ''} after ${fmtMs(line.waitedMs)}`;
  return 'nobody answered in time';
}

/** The same refusal repeated (a page retrying) is one entry with its count. */
function groupBlocked(lines: LogLine[]) {
  const groups = new Map<string, { line: LogLine; count: number }>();
  for (const line of lines) {
    const key = `${line.url}\n${line.layer}\n${line.reason}`;
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { line, count: 1 });
  }
  return [...groups.values()];
}

/** The step showing at `ms` of the video: the last one begun by then. */
export function stepAt(steps: Step[], ms: number): Step | undefined {
  let current: Step | undefined;
  for (const s of steps) if (s.t <= ms + 1) current = s;
  return current;
}
