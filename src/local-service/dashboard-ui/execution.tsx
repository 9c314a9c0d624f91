// One execution: its summary, then, while it runs, the browser live and its steps as they
// happen; once it ended, the video beside the timeline of steps (a click seeks the video, the
// video's time highlights the step), the output and the raw log. A failed execution opens at
// its failing step.

import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ExecutionRow } from '../../contract/executions.js';
import type { OutputDocument } from '../../contract/output.js';
import type { LiveEvent } from '../../contract/live.js';
import { ApiError, ErrorBox, StalePage, StatusBadge, api, artifactUrl, fetchArtifact, fmtDate, fmtMs, fmtUsd, notFoundPage, plural, prettyJson, show } from './dom.js';
import { Timeline, buildSteps, stepAt, type LogLine, type Step } from './timeline.js';
import { HumanPanel, createHumanSender, useFrameInput } from './human.js';

const POLL_MS = 2000;
/** Where a step after the video's end is shown: this much before the end (the last frame). */
const LAST_FRAME_MS = 50;
const ended = (status: string) => status === 'completed' || status === 'failed';

/** Shows the page; it polls the execution and follows its live stream until another page replaces it. */
export function executionPage(id: string) {
  show(<ExecutionView id={id} />);
}

function ExecutionView({ id }: { id: string }) {
  const [e, setE] = useState<ExecutionRow | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [liveLines, setLiveLines] = useState(0);
  const [inputError, setInputError] = useState<unknown>(undefined);
  // A person in the loop: the answers and the live view's input, sent in order.
  const send = useMemo(() => createHumanSender(id), [id]);
  const refresh = useRef<() => void>(() => {});

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      clearTimeout(timer);
      let found: ExecutionRow;
      try {
        found = await api<ExecutionRow>('GET', `/api/executions/${encodeURIComponent(id)}`);
      } catch (err) {
        if (stopped || err instanceof StalePage) return;
        if (err instanceof ApiError && err.status === 404) {
          stopped = true;
          return notFoundPage();
        }
        setError(err);
        if (err instanceof ApiError && err.status === 401) return;
        timer = setTimeout(() => void tick(), POLL_MS);
        return;
      }
      if (stopped) return;
      setError(undefined);
      setE(found);
      if (!ended(found.status)) timer = setTimeout(() => void tick(), POLL_MS);
    };
    refresh.current = () => void tick();
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [id]);

  const done = e !== undefined && ended(e.status);
  // The live view shows the run under way: the badge says so before the next poll does.
  const status = e?.status === 'queued' && liveLines > 0 ? 'running' : e?.status;
  const frameInput = useFrameInput(e?.status === 'waiting', send, setInputError);
  return (
    <>
      <h1>Execution <code class="muted">{id.slice(0, 8)}</code></h1>
      <div class="summary">{error !== undefined ? <ErrorBox error={error} /> : e && status ? <Summary e={e} status={status} /> : null}</div>
      {e && done ? (
        <Finished id={id} e={e} />
      ) : (
        <>
          <div>{/* the banner of a finished run */}</div>
          {e ? <HumanPanel e={e} send={send} inputError={inputError} /> : <section class="human" data-testid="human-panel" hidden />}
          {e ? (
            <Live id={id} frameInput={frameInput} onLines={setLiveLines} onEnd={() => refresh.current()} />
          ) : (
            <Layout media={<p class="muted">Waiting for the run to start…</p>} output={<p class="muted">The output appears when the run ends.</p>} steps={<p class="muted">Loading…</p>} />
          )}
        </>
      )}
    </>
  );
}

function Layout({ media, output, steps, stepsRef, rawLog }: { media: ComponentChildren; output: ComponentChildren; steps: ComponentChildren; stepsRef?: { current: HTMLDivElement | null }; rawLog?: ComponentChildren }) {
  return (
    <>
      <div class="exec-grid">
        <div class="exec-media">
          <div data-testid="media">{media}</div>
          <h2>Output</h2>
          <div>{output}</div>
        </div>
        <div>
          <h2>Steps</h2>
          <div class="steps-panel" ref={stepsRef}>{steps}</div>
        </div>
      </div>
      <div>{rawLog}</div>
    </>
  );
}

function Summary({ e, status }: { e: ExecutionRow; status: string }) {
  return (
    <dl>
      <dt>Status</dt><dd><StatusBadge status={status} /></dd>
      <dt>Workflow</dt><dd><a href={`#/workflows/${e.workflow_uuid}`}>{e.workflow_name}</a>{` v${e.version ?? ''}`}</dd>
      <dt>Created</dt><dd>{fmtDate(e.created_at)}</dd>
      <dt>Trigger</dt><dd data-testid="execution-trigger">{e.trigger === 'schedule' ? "schedule (made by the version's schedule)" : 'manual'}</dd>
      <dt>Duration</dt><dd>{fmtMs(e.duration_ms)}</dd>
      <dt>Counters</dt><dd data-testid="counters">{ended(e.status) ? `${plural(e.n_steps, 'step')} · ${plural(e.n_agent_actions, 'action')} · ${plural(e.n_screenshots, 'screenshot')}` : 'reported when the run ends'}</dd>
      {/* The estimated model cost, each model at its own prices (output.json usage.estimatedCostUsd). */}
      <dt>Cost</dt><dd data-testid="cost">{ended(e.status) ? fmtUsd(e.cost_usd) : 'known when the run ends'}</dd>
      <dt>Input</dt><dd><code>{JSON.stringify(e.input_payload)}</code></dd>
    </dl>
  );
}

/**
 * The live view: the browser's frames and the run's log lines over one server-sent-events
 * stream. Lines may come twice (a new viewer makes the worker send all of them again): one is
 * kept per sequence number.
 */
function Live({ id, frameInput, onLines, onEnd }: { id: string; frameInput: ReturnType<typeof useFrameInput>; onLines: (n: number) => void; onEnd: () => void }) {
  const [frame, setFrame] = useState<{ src: string; count: number } | undefined>(undefined);
  const [closed, setClosed] = useState(false);
  const [lines, setLines] = useState<LogLine[] | undefined>(undefined);
  const stepsRef = useRef<HTMLDivElement>(null);
  const following = useRef(true);
  useEffect(() => {
    const seen = new Map<number, LogLine>();
    let drawing = false;
    let count = 0;
    const source = new EventSource(`/live/executions/${encodeURIComponent(id)}`);
    source.addEventListener('frame', (m) => {
      count += 1;
      setFrame({ src: `data:image/jpeg;base64,${(m as MessageEvent<string>).data}`, count });
    });
    source.addEventListener('events', (m) => {
      for (const { seq, line } of JSON.parse((m as MessageEvent<string>).data) as LiveEvent[]) seen.set(seq, line);
      onLines(seen.size);
      if (drawing) return;
      drawing = true;
      requestAnimationFrame(() => {
        drawing = false;
        // Follows the newest step, unless the reader has scrolled up to an earlier one.
        const panel = stepsRef.current;
        following.current = !panel || panel.scrollTop + panel.clientHeight >= panel.scrollHeight - 24;
        setLines([...seen.entries()].sort((a, b) => a[0] - b[0]).map(([, line]) => line));
      });
    });
    source.addEventListener('end', () => {
      source.close();
      onEnd();
    });
    source.addEventListener('error', () => {
      // A refused stream (signed out) is not retried by the browser; a dropped one is.
      if (source.readyState === EventSource.CLOSED) setClosed(true);
    });
    return () => source.close();
  }, [id]);
  useLayoutEffect(() => {
    const panel = stepsRef.current;
    if (panel && following.current) panel.scrollTop = panel.scrollHeight;
  }, [lines]);
  const steps = useMemo(() => buildSteps(lines ?? []), [lines]);
  const caption = closed ? 'The live view is not available (signed out?).' : frame ? `${frame.count} frame${frame.count === 1 ? '' : 's'} received` : 'Waiting for the first frame…';
  return (
    <Layout
      media={
        <figure class="live" data-testid="live">
          <span class="live-badge">LIVE</span>
          <div class="live-screen">
            <img {...frameInput} src={frame?.src} data-testid="live-frame" data-frames={frame?.count ?? 0} alt="The browser, live" />
          </div>
          <figcaption class="muted">{caption}</figcaption>
        </figure>
      }
      output={<p class="muted">The output appears when the run ends.</p>}
      steps={<Timeline steps={steps} />}
      stepsRef={stepsRef}
    />
  );
}

/** What a finished run left: its artifacts, read once. */
interface Artifacts {
  video: boolean;
  captions: boolean;
  out: string | undefined;
  logs: string | undefined;
}

function Finished({ id, e }: { id: string; e: ExecutionRow }) {
  const [artifacts, setArtifacts] = useState<Artifacts | undefined>(undefined);
  useEffect(() => {
    let gone = false;
    void Promise.all([
      fetch(artifactUrl(id, 'video.mp4'), { method: 'HEAD' }),
      fetch(artifactUrl(id, 'steps.vtt'), { method: 'HEAD' }),
      fetchArtifact(id, 'output.json'),
      fetchArtifact(id, 'logs.jsonl'),
    ]).then(([video, vtt, out, logs]) => {
      if (!gone) setArtifacts({ video: video.ok, captions: vtt.ok, out, logs });
    });
    return () => {
      gone = true;
    };
  }, [id]);
  if (!artifacts) {
    return (
      <>
        <div />
        <section class="human" data-testid="human-panel" hidden />
        <Layout media={<p class="muted">Waiting for the run to start…</p>} output={<p class="muted">The output appears when the run ends.</p>} steps={<p class="muted">Loading…</p>} />
      </>
    );
  }
  return <FinishedView id={id} e={e} artifacts={artifacts} />;
}

function parseLines(logs: string | undefined): LogLine[] {
  return (logs ?? '').split('\n').filter(Boolean).flatMap((text) => {
    try {
      const line: unknown = JSON.parse(text);
      return line && typeof line === 'object' ? [line as LogLine] : [];
    } catch {
      return [];
    }
  });
}

function FinishedView({ id, e, artifacts }: { id: string; e: ExecutionRow; artifacts: Artifacts }) {
  const { out, logs } = artifacts;
  const lines = useMemo(() => parseLines(logs), [logs]);
  const built = useMemo(() => buildSteps(lines), [lines]);
  const failure = e.status === 'failed' && e.error ? `${e.error.code}: ${e.error.message}` : undefined;
  const failedStep = failure && built.length ? built[built.length - 1]!.step : undefined;
  const video = useRef<HTMLVideoElement>(null);
  const stepsRef = useRef<HTMLDivElement>(null);
  const [current, setCurrent] = useState<{ step: number; scroll: boolean } | undefined>(undefined);
  // The step last clicked stays marked while the video shows its moment (a step begun in the
  // video's last frame is shown at the end: a seek past the end stops there).
  const picked = useRef<Step | undefined>(undefined);
  const endMs = () => (video.current && Number.isFinite(video.current.duration) ? video.current.duration * 1000 : Infinity);
  // A step begun after the video's last frame shows on that frame (a seek to the very end would
  // leave the player waiting for a frame that never comes).
  const momentOf = (s: Step) => Math.min(s.t, endMs() - LAST_FRAME_MS);
  const seek = (s: Step, scroll = false) => {
    picked.current = s;
    setCurrent({ step: s.step, scroll });
    const v = video.current;
    if (!v) return;
    // Before its metadata a video cannot seek: it does once it knows its duration.
    if (v.readyState >= 1) v.currentTime = momentOf(s) / 1000;
    else v.addEventListener('loadedmetadata', () => (v.currentTime = momentOf(s) / 1000), { once: true });
  };
  const follow = () => {
    const v = video.current;
    if (!v || built.length === 0) return;
    const nowMs = v.currentTime * 1000;
    const p = picked.current;
    if (p && Math.abs(nowMs - momentOf(p)) < 2) return setCurrent({ step: p.step, scroll: false });
    picked.current = undefined;
    const s = nowMs >= endMs() - LAST_FRAME_MS - 1 ? built[built.length - 1] : stepAt(built, nowMs);
    setCurrent(s ? { step: s.step, scroll: !v.paused } : undefined);
  };
  useEffect(() => {
    const v = video.current;
    if (v) {
      // A video shows nothing before its first seek: one to its first frame, once its data is there.
      v.addEventListener('loadedmetadata', () => {
        if (v.currentTime === 0) v.currentTime = 0.001;
      }, { once: true });
      v.preload = 'auto';
      // The timeline beside the video shows the steps: captions stay loaded but off (the player's menu turns them on).
      const track = v.textTracks[0];
      if (track) track.mode = 'hidden';
    }
    // A failed run opens at its failing step.
    const last = built[built.length - 1];
    if (failedStep !== undefined && last) seek(last, true);
  }, []);
  useEffect(() => {
    if (!current?.scroll) return;
    stepsRef.current?.querySelector(`[data-testid=step][data-step="${current.step}"]`)?.scrollIntoView({ block: 'nearest' });
  }, [current]);

  const doc = useMemo(() => {
    try {
      const parsed: unknown = JSON.parse(out ?? 'null');
      return parsed && typeof parsed === 'object' ? (parsed as Partial<OutputDocument>) : undefined;
    } catch {
      return undefined;
    }
  }, [out]);
  const playback: unknown = doc?.playback;
  const shown = artifacts.video ? (
    <video ref={video} controls preload="metadata" src={artifactUrl(id, 'video.mp4')} data-testid="video" onTimeUpdate={follow} onSeeked={follow}>
      {artifacts.captions ? <track kind="captions" label="Steps" srclang="en" default src={artifactUrl(id, 'steps.vtt')} /> : null}
    </video>
  ) : (
    <p class="muted">No video for this execution.</p>
  );
  return (
    <>
      <div>
        {failure ? (
          <p class="error banner" data-testid="execution-error">{failure}</p>
        ) : playback !== undefined && playback !== null ? (
          // A run played back from a recording, not a model (the demo without a model key): said where a person looks.
          <p class="notice banner" role="status" data-testid="playback">{`Played back from a recording, not a model: ${playbackReason(playback)}`}</p>
        ) : null}
      </div>
      <section class="human" data-testid="human-panel" hidden />
      <Layout
        media={shown}
        output={<OutputView id={id} out={out} doc={doc} />}
        steps={<Timeline steps={built} executionId={id} failedStep={failedStep} failure={failure} current={current?.step} onPick={(s) => seek(s)} />}
        stepsRef={stepsRef}
        rawLog={
          logs === undefined ? (
            <p class="muted">No logs.jsonl.</p>
          ) : (
            <details class="raw-log" data-testid="raw-log">
              <summary>{`Raw log (logs.jsonl, ${lines.length} lines)`}</summary>
              <p><a href={artifactUrl(id, 'logs.jsonl')} target="_blank" rel="noopener">Open logs.jsonl</a></p>
              <pre data-testid="log">{logs.split('\n').filter(Boolean).slice(-500).map(describeLine).join('\n')}</pre>
            </details>
          )
        }
      />
    </>
  );
}

function playbackReason(playback: unknown): string {
  if (typeof playback === 'string') return playback;
  if (playback && typeof playback === 'object' && 'reason' in playback && typeof playback.reason === 'string') return playback.reason;
  return JSON.stringify(playback);
}

function OutputView({ id, out, doc }: { id: string; out: string | undefined; doc: Partial<OutputDocument> | undefined }) {
  const downloads = Array.isArray(doc?.downloads) ? doc.downloads.filter((d) => typeof d?.name === 'string') : [];
  const byModel = Array.isArray(doc?.usage?.byModel) ? doc.usage.byModel.filter((m) => typeof m?.model === 'string') : [];
  const budget = doc?.budget;
  const cache = doc?.cache;
  const profile = doc?.profile;
  const steps = (n: number) => `${n} step${n === 1 ? '' : 's'}`;
  return (
    <>
      {downloads.length > 0 ? (
        // Files the pages downloaded, kept as artifacts `downloads/{name}` (docs/files-and-codes.md).
        <>
          <h3>Downloads</h3>
          <ul>
            {downloads.map((d) => (
              <li><a href={artifactUrl(id, `downloads/${d.name}`)} download={d.name} data-testid="download">{d.name}</a>{` ${fmtBytes(d.bytes)} · ${d.contentType ?? ''}`}</li>
            ))}
          </ul>
        </>
      ) : null}
      {byModel.length > 0 ? (
        // What each model cost (output.json usage.byModel): a run may use more than one (a repair, the final check).
        <p class="muted" data-testid="cost-by-model">
          {`Cost by model: ${byModel.map((m) => `${m.model} ${fmtUsd(m.costUsd)} (${m.requests} request${m.requests === 1 ? '' : 's'}${m.prices === 'table' ? '' : `, ${m.prices} prices`})`).join('; ')}.`}
          {budget && (budget.tokens !== null || budget.usd !== null) ? ` Budget: ${[budget.tokens !== null ? `${budget.tokens} tokens` : null, budget.usd !== null ? fmtUsd(budget.usd) : null].filter(Boolean).join(', ')}.` : ''}
        </p>
      ) : null}
      {profile && typeof profile === 'object' ? (
        // The run's browser profile (docs/profiles.md): counts only; a stale sign-in is called out.
        <p class={profile.stale ? 'warning' : 'muted'} data-testid="profile">
          {`Profile ${profile.id}: ${profile.loaded ? 'loaded' : 'nothing to load'}, ${profile.saved ? 'saved' : 'not saved'} (${profile.cookies} cookies, ${profile.origins} origins).${profile.stale ? ' The saved sign-in no longer worked: the run signed in again.' : ''}`}
        </p>
      ) : null}
      {cache && typeof cache === 'object' ? <p class="muted" data-testid="cache">{cacheText(cache, steps)}</p> : null}
      {doc && 'output' in doc ? <div class="data" data-testid="output-data"><DataView value={doc.output} /></div> : null}
      {out === undefined ? <p class="muted">No output.json.</p> : <pre data-testid="output">{prettyJson(out)}</pre>}
    </>
  );
}

/** What the run cache did (docs/run-cache.md): replayed, repaired, by the model, and the final check's verdict. */
function cacheText(cache: OutputDocument['cache'], steps: (n: number) => string): string {
  const repaired = cache.repairedSteps > 0 ? `, ${steps(cache.repairedSteps)} repaired` : '';
  const fc = cache.finalCheck;
  const check = fc?.ran ? `; final check: ${fc.matches === true ? 'the page shows the input' : fc.matches === false ? `the page does not show the input${fc.reason ? ` (${fc.reason})` : ''}` : 'no verdict'}` : '';
  return cache.used
    ? `Run cache: ${steps(cache.replayedSteps)} replayed${repaired}, ${cache.modelSteps} by the model${cache.fallbackAtStep ? `; the model took over at step ${cache.fallbackAtStep}: ${cache.reason}` : cache.reason ? ` (${cache.reason})` : ''}${check}.`
    : `Run cache: not used${cache.reason ? ` (${cache.reason})` : ''}.`;
}

/** A JSON value as data: objects as term and value, arrays as lists, the rest as text. */
function DataView({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span class="muted">none</span>;
  if (Array.isArray(value)) return value.length === 0 ? <span class="muted">empty list</span> : <ol>{value.map((v) => <li><DataView value={v} /></li>)}</ol>;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.length === 0 ? <span class="muted">empty</span> : <dl>{entries.map(([k, v]) => <><dt>{k}</dt><dd><DataView value={v} /></dd></>)}</dl>;
  }
  return <span>{String(value)}</span>;
}

function fmtBytes(n: unknown) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function describeLine(text: string) {
  try {
    const { type, time, ts, ...rest } = JSON.parse(text) as Record<string, unknown>;
    const at = time ?? ts;
    return `${at ? `${String(at).slice(11, 23)} ` : ''}${typeof type === 'string' ? type : ''} ${JSON.stringify(rest)}`;
  } catch {
    return text;
  }
}
