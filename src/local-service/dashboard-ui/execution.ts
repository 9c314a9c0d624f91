/* eslint-disable @typescript-eslint/no-explicit-any -- the elements of the DOM builder and the API's JSON are untyped here for now: the contract's z.infer types are to replace them (docs/dashboard.md). */
// One execution: its summary, then, while it runs, the browser live and its steps as they
// happen; once it ended, the video beside the timeline of steps (a click seeks the video, the
// video's time highlights the step), the output and the raw log. A failed execution opens at
// its failing step.

import { ApiError, api, artifactUrl, errorBox, fetchArtifact, fmtDate, fmtMs, fmtUsd, h, notFoundPage, plural, prettyJson, render, statusBadge } from './dom.js';
import { buildSteps, renderTimeline, stepAt } from './timeline.js';
import { createHumanPanel } from './human.js';
import type { LiveEvent } from '../../contract/live.js';

const POLL_MS = 2000;
/** Where a step after the video's end is shown: this much before the end (the last frame). */
const LAST_FRAME_MS = 50;
const ended = (status) => status === 'completed' || status === 'failed';

/** Renders the page; returns its cleanup (timers, live stream). */
export function executionPage(id) {
  const summary = h('div', { class: 'summary' });
  const banner = h('div');
  const media = h('div', { 'data-testid': 'media' }, h('p', { class: 'muted' }, 'Waiting for the run to start…'));
  const output = h('div', {}, h('p', { class: 'muted' }, 'The output appears when the run ends.'));
  const steps = h('div', { class: 'steps-panel' }, h('p', { class: 'muted' }, 'Loading…'));
  const rawLog = h('div');
  // A person in the loop: the question while the run waits for one.
  const human = createHumanPanel(id);
  render(
    h('h1', {}, 'Execution ', h('code', { class: 'muted' }, id.slice(0, 8))),
    summary,
    banner,
    human.el,
    h('div', { class: 'exec-grid' },
      h('div', { class: 'exec-media' }, media, h('h2', {}, 'Output'), output),
      h('div', {}, h('h2', {}, 'Steps'), steps),
    ),
    rawLog,
  );

  let stopped = false;
  let timer;
  let live;
  let artifactsLoaded = false;

  const stopLive = () => {
    live?.close();
    live = undefined;
  };

  const refresh = async () => {
    clearTimeout(timer);
    let e;
    try {
      e = await api('GET', `/api/executions/${encodeURIComponent(id)}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        stopped = true;
        return notFoundPage();
      }
      summary.replaceChildren(errorBox(err));
      if (err instanceof ApiError && err.status === 401) return;
      if (!stopped) timer = setTimeout(refresh, POLL_MS);
      return;
    }
    if (stopped) return;
    summary.replaceChildren(summaryList(e));
    human.update(e);
    if (ended(e.status)) {
      stopLive();
      if (!artifactsLoaded) {
        artifactsLoaded = true;
        await showFinished(id, e, { media, output, steps, rawLog, banner });
      }
      return;
    }
    live ??= startLive(id, { media, steps, onEnd: () => void refresh(), onFrameElement: (img) => human.attach(img) });
    timer = setTimeout(refresh, POLL_MS);
  };
  void refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
    stopLive();
  };
}

function summaryList(e) {
  return h('dl', {},
    h('dt', {}, 'Status'), h('dd', {}, statusBadge(e.status)),
    h('dt', {}, 'Workflow'), h('dd', {}, h('a', { href: `#/workflows/${e.workflow_uuid}` }, e.workflow_name), ` v${e.version ?? ''}`),
    h('dt', {}, 'Created'), h('dd', {}, fmtDate(e.created_at)),
    h('dt', {}, 'Trigger'), h('dd', { 'data-testid': 'execution-trigger' }, e.trigger === 'schedule' ? 'schedule (made by the version\'s schedule)' : 'manual'),
    h('dt', {}, 'Duration'), h('dd', {}, fmtMs(e.duration_ms)),
    h('dt', {}, 'Counters'), h('dd', { 'data-testid': 'counters' }, ended(e.status) ? `${plural(e.n_steps, 'step')} · ${plural(e.n_agent_actions, 'action')} · ${plural(e.n_screenshots, 'screenshot')}` : 'reported when the run ends'),
    // The estimated model cost, each model at its own prices (output.json usage.estimatedCostUsd).
    h('dt', {}, 'Cost'), h('dd', { 'data-testid': 'cost' }, ended(e.status) ? fmtUsd(e.cost_usd) : 'known when the run ends'),
    h('dt', {}, 'Input'), h('dd', {}, h('code', {}, JSON.stringify(e.input_payload))),
  );
}

/**
 * The live view: the browser's frames and the run's log lines over one server-sent-events
 * stream. Lines may come twice (a new viewer makes the worker send all of them again): one is
 * kept per sequence number.
 */
function startLive(id, { media, steps, onEnd, onFrameElement }) {
  const frame = h('img', { class: 'live-frame', 'data-testid': 'live-frame', 'data-frames': 0, alt: 'The browser, live' });
  onFrameElement?.(frame);
  const caption = h('figcaption', { class: 'muted' }, 'Waiting for the first frame…');
  media.replaceChildren(h('figure', { class: 'live', 'data-testid': 'live' }, h('span', { class: 'live-badge' }, 'LIVE'), frame, caption));
  const lines = new Map();
  let frames = 0;
  let drawing = false;

  const draw = () => {
    drawing = false;
    const ordered = [...lines.entries()].sort((a, b) => a[0] - b[0]).map(([, line]) => line);
    const built = buildSteps(ordered);
    // Follows the newest step, unless the reader has scrolled up to an earlier one.
    const following = steps.scrollTop + steps.clientHeight >= steps.scrollHeight - 24;
    steps.replaceChildren(renderTimeline(built, { executionId: undefined, failedStep: undefined, failure: undefined, onPick: undefined }));
    if (following) steps.scrollTop = steps.scrollHeight;
  };

  const source = new EventSource(`/live/executions/${encodeURIComponent(id)}`);
  source.addEventListener('frame', (m) => {
    frames += 1;
    frame.src = `data:image/jpeg;base64,${m.data}`;
    frame.dataset.frames = String(frames);
    caption.textContent = `${frames} frame${frames === 1 ? '' : 's'} received`;
  });
  source.addEventListener('events', (m) => {
    const events: LiveEvent[] = JSON.parse(m.data);
    for (const { seq, line } of events) lines.set(seq, line);
    // The live view shows the run under way: the badge says so before the next poll does.
    const badge = document.querySelector<HTMLElement>('.summary [data-testid=status]');
    if (badge && badge.textContent === 'queued' && lines.size > 0) {
      badge.textContent = 'running';
      badge.className = 'status running';
    }
    if (!drawing) {
      drawing = true;
      requestAnimationFrame(draw);
    }
  });
  source.addEventListener('end', () => {
    source.close();
    onEnd();
  });
  source.addEventListener('error', () => {
    // A refused stream (signed out) is not retried by the browser; a dropped one is.
    if (source.readyState === EventSource.CLOSED) caption.textContent = 'The live view is not available (signed out?).';
  });
  steps.replaceChildren(h('p', { class: 'muted', 'data-testid': 'no-steps' }, 'No step yet.'));
  return source;
}

async function showFinished(id, e, { media, output, steps, rawLog, banner }) {
  const [head, vtt, out, logs] = await Promise.all([
    fetch(artifactUrl(id, 'video.mp4'), { method: 'HEAD' }),
    fetch(artifactUrl(id, 'steps.vtt'), { method: 'HEAD' }),
    fetchArtifact(id, 'output.json'),
    fetchArtifact(id, 'logs.jsonl'),
  ]);
  let video;
  if (head.ok) {
    video = h('video', { controls: true, preload: 'metadata', src: artifactUrl(id, 'video.mp4'), 'data-testid': 'video' });
    // A video shows nothing before its first seek: one to its first frame, once its data is there.
    video.addEventListener('loadedmetadata', () => {
      if (video.currentTime === 0) video.currentTime = 0.001;
    }, { once: true });
    video.preload = 'auto';
    if (vtt.ok) {
      video.append(h('track', { kind: 'captions', label: 'Steps', srclang: 'en', default: true, src: artifactUrl(id, 'steps.vtt') }));
      // The timeline beside the video shows the steps: captions stay loaded but off (the player's menu turns them on).
      video.textTracks[0].mode = 'hidden';
    }
    media.replaceChildren(video);
  } else {
    media.replaceChildren(h('p', { class: 'muted' }, 'No video for this execution.'));
  }
  output.replaceChildren(out === undefined ? h('p', { class: 'muted' }, 'No output.json.') : h('pre', { 'data-testid': 'output' }, prettyJson(out)));
  const doc = parseJson(out);
  if (doc && typeof doc === 'object' && 'output' in doc) output.prepend(h('div', { class: 'data', 'data-testid': 'output-data' }, dataView(doc.output)));
  if (doc?.playback !== undefined && doc.playback !== null) {
    // A run played back from a recording, not a model (the demo without a model key): said where a person looks.
    const reason = typeof doc.playback === 'string' ? doc.playback : typeof doc.playback?.reason === 'string' ? doc.playback.reason : JSON.stringify(doc.playback);
    banner.append(h('p', { class: 'notice banner', role: 'status', 'data-testid': 'playback' }, `Played back from a recording, not a model: ${reason}`));
  }
  const cache = doc?.cache;
  if (cache && typeof cache === 'object') {
    // What the run cache did (docs/run-cache.md): replayed, repaired, by the model, and the final check's verdict.
    const steps = (n) => `${n} step${n === 1 ? '' : 's'}`;
    const repaired = cache.repairedSteps > 0 ? `, ${steps(cache.repairedSteps)} repaired` : '';
    const check = cache.finalCheck?.ran ? `; final check: ${cache.finalCheck.matches === true ? 'the page shows the input' : cache.finalCheck.matches === false ? `the page does not show the input${cache.finalCheck.reason ? ` (${cache.finalCheck.reason})` : ''}` : 'no verdict'}` : '';
    const text = cache.used
      ? `Run cache: ${steps(cache.replayedSteps)} replayed${repaired}, ${cache.modelSteps} by the model${cache.fallbackAtStep ? `; the model took over at step ${cache.fallbackAtStep}: ${cache.reason}` : cache.reason ? ` (${cache.reason})` : ''}${check}.`
      : `Run cache: not used${cache.reason ? ` (${cache.reason})` : ''}.`;
    output.prepend(h('p', { class: 'muted', 'data-testid': 'cache' }, text));
  }
  const profile = doc?.profile;
  if (profile && typeof profile === 'object') {
    // The run's browser profile (docs/profiles.md): counts only; a stale sign-in is called out.
    const text = `Profile ${profile.id}: ${profile.loaded ? 'loaded' : 'nothing to load'}, ${profile.saved ? 'saved' : 'not saved'} (${profile.cookies} cookies, ${profile.origins} origins).`;
    output.prepend(h('p', { class: profile.stale ? 'warning' : 'muted', 'data-testid': 'profile' }, profile.stale ? `${text} The saved sign-in no longer worked: the run signed in again.` : text));
  }
  const byModel = Array.isArray(doc?.usage?.byModel) ? doc.usage.byModel.filter((m) => typeof m?.model === 'string') : [];
  if (byModel.length > 0) {
    // What each model cost (output.json usage.byModel): a run may use more than one (a repair, the final check).
    const budget = doc.budget && (doc.budget.tokens !== null || doc.budget.usd !== null) ? ` Budget: ${[doc.budget.tokens !== null ? `${doc.budget.tokens} tokens` : null, doc.budget.usd !== null ? fmtUsd(doc.budget.usd) : null].filter(Boolean).join(', ')}.` : '';
    const models = byModel.map((m) => `${m.model} ${fmtUsd(m.costUsd)} (${m.requests} request${m.requests === 1 ? '' : 's'}${m.prices === 'table' ? '' : `, ${m.prices} prices`})`).join('; ');
    output.prepend(h('p', { class: 'muted', 'data-testid': 'cost-by-model' }, `Cost by model: ${models}.${budget}`));
  }
  const downloads = Array.isArray(doc?.downloads) ? doc.downloads.filter((d) => typeof d?.name === 'string') : [];
  if (downloads.length > 0) {
    // Files the pages downloaded, kept as artifacts `downloads/{name}` (docs/files-and-codes.md).
    output.prepend(
      h('h3', {}, 'Downloads'),
      h('ul', {}, downloads.map((d) =>
        h('li', {}, h('a', { href: artifactUrl(id, `downloads/${d.name}`), download: d.name, 'data-testid': 'download' }, d.name), ` ${fmtBytes(d.bytes)} · ${d.contentType ?? ''}`),
      )),
    );
  }

  const lines = (logs ?? '').split('\n').filter(Boolean).flatMap((text) => {
    try {
      return [JSON.parse(text)];
    } catch {
      return [];
    }
  });
  const built = buildSteps(lines);
  const failure = e.status === 'failed' && e.error ? `${e.error.code}: ${e.error.message}` : undefined;
  if (failure) banner.replaceChildren(h('p', { class: 'error banner', 'data-testid': 'execution-error' }, failure));
  const failedStep = failure && built.length ? built[built.length - 1].step : undefined;

  const highlight = (s, scroll) => {
    for (const el of list.querySelectorAll('[data-testid=step].current')) {
      el.classList.remove('current');
      el.removeAttribute('aria-current');
    }
    const el = s && list.querySelector(`[data-testid=step][data-step="${s.step}"]`);
    if (!el) return;
    el.classList.add('current');
    el.setAttribute('aria-current', 'step');
    if (scroll) el.scrollIntoView({ block: 'nearest' });
  };
  // The step last clicked stays marked while the video shows its moment (a step begun in the
  // video's last frame is shown at the end: a seek past the end stops there).
  let picked;
  const seek = (s) => {
    picked = s;
    highlight(s, false);
    if (!video) return;
    // Before its metadata a video cannot seek: it does once it knows its duration.
    if (video.readyState >= 1) video.currentTime = momentOf(s) / 1000;
    else video.addEventListener('loadedmetadata', () => (video.currentTime = momentOf(s) / 1000), { once: true });
  };
  const endMs = () => (video && Number.isFinite(video.duration) ? video.duration * 1000 : Infinity);
  // A step begun after the video's last frame shows on that frame (a seek to the very end would
  // leave the player waiting for a frame that never comes).
  const momentOf = (s) => Math.min(s.t, endMs() - LAST_FRAME_MS);
  const list = renderTimeline(built, { executionId: id, failedStep, failure, onPick: seek });
  steps.replaceChildren(list);
  if (video && built.length) {
    const follow = () => {
      const nowMs = video.currentTime * 1000;
      if (picked && Math.abs(nowMs - momentOf(picked)) < 2) return highlight(picked, false);
      picked = undefined;
      highlight(nowMs >= endMs() - LAST_FRAME_MS - 1 ? built[built.length - 1] : stepAt(built, nowMs), !video.paused);
    };
    video.addEventListener('timeupdate', follow);
    video.addEventListener('seeked', follow);
  }
  if (failedStep !== undefined) {
    const s = built[built.length - 1];
    seek(s);
    highlight(s, true);
  }

  rawLog.replaceChildren(
    logs === undefined
      ? h('p', { class: 'muted' }, 'No logs.jsonl.')
      : h('details', { class: 'raw-log', 'data-testid': 'raw-log' },
          h('summary', {}, `Raw log (logs.jsonl, ${lines.length} lines)`),
          h('p', {}, h('a', { href: artifactUrl(id, 'logs.jsonl'), target: '_blank', rel: 'noopener' }, 'Open logs.jsonl')),
          h('pre', { 'data-testid': 'log' }, logs.split('\n').filter(Boolean).slice(-500).map(describeLine).join('\n')),
        ),
  );
}

/** A JSON value as data: objects as term and value, arrays as lists, the rest as text. */
function dataView(value: unknown): any {
  if (value === null || value === undefined) return h('span', { class: 'muted' }, 'none');
  if (Array.isArray(value)) return value.length === 0 ? h('span', { class: 'muted' }, 'empty list') : h('ol', {}, value.map((v) => h('li', {}, dataView(v))));
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.length === 0 ? h('span', { class: 'muted' }, 'empty') : h('dl', {}, entries.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, dataView(v))]));
  }
  return h('span', {}, String(value));
}

function parseJson(text) {
  try {
    return JSON.parse(text ?? 'null');
  } catch {
    return null;
  }
}

function fmtBytes(n) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function describeLine(text) {
  try {
    const { type, time, ts, ...rest } = JSON.parse(text);
    const at = time ?? ts;
    return `${at ? `${String(at).slice(11, 23)} ` : ''}${type ?? ''} ${JSON.stringify(rest)}`;
  } catch {
    return text;
  }
}
