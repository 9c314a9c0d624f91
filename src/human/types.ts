import type { HumanAnswer, HumanInput } from '../contract/human.js';

/**
 * The people port (docs/human-in-the-loop.md): where a waiting run hears a person's answer and,
 * while it waits, their input for the page. One per worker process, serving all its waiting runs;
 * the Redis stream adapter is src/human/redis-desk.ts.
 */
export interface HumanDesk {
  /**
   * Where the execution's stream stands now: entries up to it belong to earlier questions.
   * `since`, the last entry the run read: answers after it that nobody read are logged as ignored.
   */
  mark(executionId: string, since?: string): Promise<string>;
  /**
   * Waits for the first answer after `after`, handing each input found before it to `onInput`,
   * in order. Resolves undefined when `timeoutMs` passes without an answer; rejects when the
   * signal aborts. A wait holds no connection of its own.
   */
  wait(options: {
    executionId: string;
    after: string;
    timeoutMs: number;
    onInput(input: HumanInput): Promise<void>;
    signal: AbortSignal;
  }): Promise<(HumanAnswer & { id: string }) | undefined>;
  /** The run is over: answers left unread are logged as ignored, the stream is removed. */
  release(executionId: string, after: string | undefined): Promise<void>;
  close(): Promise<void>;
}
