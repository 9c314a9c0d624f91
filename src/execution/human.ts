/**
 * A person in the loop as an execution sees it (docs/human-in-the-loop.md): what the model asks
 * (`ask_human`, agent/ask-human.ts) and the runner's side of the wait (runner/human-gate.ts). The
 * exchange kept for output.json's `human` is a wire shape (contract/output.ts).
 */
import type { HumanAnswer, HumanKind } from '../contract/human.js';

export interface HumanRequest {
  kind: HumanKind;
  question: string;
  choices: string[] | null;
}

/** The runner's side of a wait. Throws `human_timeout` when nobody answers in time, or the run's abort reason. */
export interface HumanGate {
  ask(request: HumanRequest, signal: AbortSignal): Promise<HumanAnswer>;
}
