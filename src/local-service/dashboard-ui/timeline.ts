/* eslint-disable @typescript-eslint/no-explicit-any -- the elements of the DOM builder and the API's JSON are untyped here for now: the contract's z.infer types are to replace them (docs/dashboard.md). */
// The steps of an execution, built from its logs.jsonl lines: for each step, the screen the model
// saw (step_screenshot), what it said and asked (model_turn), what was done (action), requests
// refused meanwhile (blocked) and errors; for a step that repaired a cached one (step_repair),
// what the earlier run did there and what the repair did instead. Lines are read by their fields, not by tool or action
// names, so every toolset shows the same way. `t` is ms since the start: the video's time.

import { artifactUrl, fmtClock, fmtCount, fmtMs, h } from './dom.js';

/** A person in the loop: the question, their input and the answer, shown in the step that asked. */
const HUMAN_LINES = ['waiting', 'human_input', 'resumed', 'human_timeout'];

/** Lines that belong to the step running when they happen. */
const DURING_STEP = new Set(['blocked', 'error', 'browser_crashed', 'output_invalid', 'finish', ...HUMAN_LINES]);

export function buildSteps(lines) {
  const byNumber = new Map<number, any>();
  const step = (n) => {
    let s = byNumber.get(n);
    if (!s) {
      s = { step: n, t: undefined, text: '', usage: undefined, latencyMs: undefined, by: undefined, repair: undefined, shots: [], actions: [], blocked: [], errors: [], human: [] };
      byNumber.set(n, s);
    }
    return s;
  };
  const pending: any[] = [];
  for (const line of lines) {
    const n = Number.isInteger(line.step) ? line.step : undefined;
    if (line.by === 'cache' || line.by === 'model' || line.by === 'repair') if (n !== undefined) step(n).by ??= line.by;
    if (line.type === 'model_turn' && n !== undefined) {
      const s = step(n);
      s.t = line.t;
      s.text = line.text ?? '';
      s.usage = line.usage;
      s.latencyMs = line.latencyMs;
      s.stopReason = line.stopReason;
    } else if (line.type === 'action' && n !== undefined) {
      step(n).actions.push(line);
    } else if (line.type === 'step_screenshot' && n !== undefined) {
      step(n).shots.push(line);
    } else if (line.type === 'step_repair' && n !== undefined) {
      step(n).repair = line;
    } else if (DURING_STEP.has(line.type)) {
      pending.push(line);
    }
  }
  const steps = [...byNumber.values()].sort((a, b) => a.step - b.step);
  for (const s of steps) {
    // A step replayed from a run cache has no model turn: it starts with its first action.
    s.t ??= s.actions[0]?.t ?? s.shots[0]?.t ?? 0;
  }
  // Refusals and errors go to the step under way when they happened (the first, if earlier).
  for (const line of pending) {
    let owner = steps[0];
    for (const s of steps) if (s.t <= line.t) owner = s;
    if (!owner) continue;
    if (line.type === 'blocked') owner.blocked.push(line);
    else if (HUMAN_LINES.includes(line.type)) owner.human.push(line);
    else if (line.type !== 'finish') owner.errors.push(line.message ?? line.errors ?? line.type);
  }
  return steps;
}

function actionText(a) {
  if (a.label) return a.label;
  const name = a.action ?? a.tool ?? 'action';
  const input = a.input && typeof a.input === 'object' ? Object.entries(a.input).filter(([k]) => k !== 'action') : [];
  const args = input.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
  return args ? `${name} (${args.length > 120 ? `${args.slice(0, 119)}…` : args})` : name;
}

function tokens(usage) {
  if (!usage) return undefined;
  const cached = (usage.cacheReadInputTokens ?? 0) + (usage.cacheCreationInputTokens ?? 0);
  const input = (usage.inputTokens ?? 0) + cached;
  return `${fmtCount(input)} in${cached ? ` (${fmtCount(usage.cacheReadInputTokens ?? 0)} cached)` : ''} · ${fmtCount(usage.outputTokens ?? 0)} out`;
}

/**
 * The timeline's list. `executionId` set: thumbnails come from the artifacts (a finished run);
 * unset: a live run, whose screenshots are not uploaded yet. `onPick(step)` runs on a click.
 */
export function renderTimeline(steps, { executionId, failedStep, failure, onPick }) {
  if (steps.length === 0) return h('p', { class: 'muted', 'data-testid': 'no-steps' }, 'No step yet.');
  let seen;
  return h('ol', { class: 'timeline', 'data-testid': 'timeline' },
    steps.map((s) => {
      const failed = failedStep === s.step;
      const actionTime = s.actions.reduce((sum, a) => sum + (a.durationMs ?? 0), 0);
      // No new screenshot at this step (the last action failed): the model still had the last one.
      const shot = s.shots[0] ?? seen;
      const reused = s.shots.length === 0 && shot !== undefined;
      seen = s.shots[s.shots.length - 1] ?? seen;
      const meta = [s.latencyMs !== undefined ? `model ${fmtMs(s.latencyMs)}` : null, s.actions.length ? `actions ${fmtMs(actionTime)}` : null, tokens(s.usage)].filter(Boolean).join(' · ');
      return h('li', {
        class: `step${failed ? ' failed' : ''}`,
        'data-testid': 'step',
        'data-step': s.step,
        'data-t': s.t,
        tabindex: 0,
        title: 'Show this moment in the video',
        onclick: () => onPick?.(s),
        onkeydown: (e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            onPick?.(s);
          }
        },
      },
        executionId && shot
          ? h('img', {
              class: reused ? 'thumb reused' : 'thumb',
              'data-testid': 'step-thumb',
              loading: 'lazy',
              // A picture of an earlier step is named as such: it is not what this step showed.
              alt: reused ? `No new picture at step ${s.step}: the last one, from step ${shot.step}` : `What the model saw at step ${s.step}`,
              'data-shot-step': shot.step,
              title: reused ? `No new screenshot at this step: the model still had step ${shot.step}'s` : undefined,
              src: artifactUrl(executionId, shot.key),
            })
          : h('div', { class: 'thumb empty' }, executionId ? 'no screenshot' : 'live'),
        h('div', { class: 'step-body' },
          h('div', { class: 'step-title' },
            h('strong', {}, `Step ${s.step}`),
            h('span', { class: 'muted' }, fmtClock(s.t)),
            s.by ? h('span', { class: `tag ${s.by}`, 'data-testid': 'step-by' }, BY_TAGS[s.by] ?? s.by) : null,
            s.blocked.length ? h('span', { class: 'tag blocked' }, `${s.blocked.length} blocked`) : null,
            s.shots.length > 1 ? h('span', { class: 'muted' }, `${s.shots.length} screenshots`) : null,
          ),
          s.text ? h('p', { class: 'step-text', 'data-testid': 'step-text' }, s.text) : null,
          !executionId && s.latencyMs === undefined && s.actions.length === 0 ? h('p', { class: 'muted' }, 'The model is looking at this screen…') : null,
          s.actions.length
            ? h('ul', { class: 'actions' }, s.actions.map((a) => h('li', { class: a.ok === false ? 'action failed' : 'action', 'data-testid': 'step-action' }, actionText(a), a.ok === false && a.error ? h('span', { class: 'error' }, ` — ${a.error}`) : null)))
            : null,
          s.repair ? repairView(s.repair) : null,
          s.human.length
            ? h('ul', { class: 'actions' }, s.human.map((line) => h('li', { class: 'human-line', 'data-testid': 'step-human' }, humanText(line))))
            : null,
          s.blocked.length
            ? h('ul', { class: 'actions' }, groupBlocked(s.blocked).map(({ line, count }) =>
                h('li', { class: 'blocked', 'data-testid': 'step-blocked' }, h('strong', {}, count > 1 ? `blocked ×${count} ` : 'blocked '), `${line.url} (${line.layer}): ${line.reason}`)))
            : null,
          s.errors.map((m) => h('p', { class: 'error' }, String(m))),
          failed && failure ? h('p', { class: 'error', 'data-testid': 'step-error' }, failure) : null,
          meta ? h('div', { class: 'step-meta muted' }, meta) : null,
        ),
      );
    }),
  );
}

const BY_TAGS = { cache: 'from cache', model: 'model', repair: 'repair' };

/**
 * A repaired cached step (docs/run-cache.md#repair-not-restart): the step of the earlier run that
 * no longer fit the page and why, what the earlier run did there, what the repair did instead,
 * and where the replay went on — or why the model took the run over.
 */
function repairView(line) {
  const list = (items) => (items?.length ? h('ul', { class: 'actions' }, items.map((item) => h('li', { class: 'action' }, item))) : h('p', { class: 'muted' }, 'nothing'));
  const ended =
    line.outcome === 'resumed'
      ? line.resumedAtStep
        ? `The replay went on at the earlier run's step ${line.resumedAtStep}.`
        : 'The replay went on to the final check.'
      : line.outcome === 'flow_changed'
        ? `The flow has changed${line.note ? `: ${line.note}` : ''}. The model took the run over.`
        : `The repair did not lead back to the earlier run's steps${line.note ? ` (${line.note})` : ''}. The model took the run over.`;
  return h('div', { class: 'repair-view', 'data-testid': 'step-repair' },
    h('p', {}, h('strong', {}, `Repair of the earlier run's step ${line.cachedStep}`), ` — ${line.reason}`),
    h('div', { class: 'repair-before', 'data-testid': 'repair-before' }, h('span', { class: 'muted' }, 'Before (the earlier run):'), list(line.before)),
    h('div', { class: 'repair-after', 'data-testid': 'repair-after' }, h('span', { class: 'muted' }, 'After (the repair):'), list(line.after)),
    line.notEntered?.length ? h('p', { class: 'muted' }, `Not entered (the pages no longer ask for them): ${line.notEntered.join(', ')}`) : null,
    h('p', { class: line.outcome === 'resumed' ? 'muted' : 'warning', 'data-testid': 'repair-outcome' }, ended),
  );
}

function humanText(line) {
  if (line.type === 'waiting') return `asked a person (${line.kind}): ${line.question}`;
  if (line.type === 'human_input') return `person: ${line.kind}${typeof line.target === 'string' ? ` ${line.target}` : line.target ? ` (${line.target.x}, ${line.target.y})` : ''}`;
  if (line.type === 'resumed') return `answered${line.answeredBy ? ` by ${line.answeredBy}` : ''} after ${fmtMs(line.waitedMs)}`;
  return 'nobody answered in time';
}

/** The same refusal repeated (a page retrying) is one entry with its count. */
function groupBlocked(lines) {
  const groups = new Map();
  for (const line of lines) {
    const key = `${line.url}\n${line.layer}\n${line.reason}`;
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { line, count: 1 });
  }
  return [...groups.values()];
}

/** The step showing at `ms` of the video: the last one begun by then. */
export function stepAt(steps, ms) {
  let current;
  for (const s of steps) if (s.t <= ms + 1) current = s;
  return current;
}
