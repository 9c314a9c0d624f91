import type { ActionMark } from './types.js';

/**
 * WebVTT track of the agent's actions (pure): one cue per action mark, at the moment it
 * happened on the video's timeline, so a reviewer can read what the agent did while watching.
 */

/** A cue lasts until the next action, within these bounds (overlapping cues stack). */
const MIN_CUE_MS = 800;
const MAX_CUE_MS = 3000;

export function buildStepsVtt(marks: readonly ActionMark[], startedAtMs: number): string {
  const ordered = marks
    .map((mark, index) => ({ mark, index }))
    .sort((a, b) => a.mark.atMs - b.mark.atMs || a.index - b.index)
    .map((entry) => entry.mark);
  const lines = ['WEBVTT', ''];
  ordered.forEach((mark, i) => {
    const startMs = Math.max(0, mark.atMs - startedAtMs);
    const next = ordered[i + 1];
    const untilNextMs = next ? Math.max(0, next.atMs - startedAtMs) - startMs : MAX_CUE_MS;
    const endMs = startMs + Math.min(MAX_CUE_MS, Math.max(MIN_CUE_MS, untilNextMs));
    lines.push(`step-${i + 1}`, `${formatVttTime(startMs)} --> ${formatVttTime(endMs)}`, escapeCueText(mark.label), '');
  });
  return lines.join('\n');
}

/** `hh:mm:ss.ttt`, the WebVTT timestamp form (hours always present, for players that need them). */
export function formatVttTime(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const seconds = Math.floor((total % 60_000) / 1000);
  const millis = total % 1000;
  return `${pad(hours, 2)}:${pad(minutes, 2)}:${pad(seconds, 2)}.${pad(millis, 3)}`;
}

/**
 * Cue text is a tiny markup language: `&`, `<` and `>` must be escaped (this also keeps
 * `-->` out of the text), and a blank line would end the cue, so line breaks become spaces.
 */
export function escapeCueText(text: string): string {
  const flat = text.replace(/\r\n|\r|\n/g, ' ').trim();
  const escaped = flat.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return escaped.length > 0 ? escaped : '(action)';
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}
