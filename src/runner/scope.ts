/**
 * The resources one execution (or the daemon) opened, closed in reverse on every path (success,
 * failure, abort, throw): graphile-worker's `release()`, or what `await using` with an
 * `AsyncDisposableStack` gives. Node has `AsyncDisposableStack` only from version 24 and this
 * worker runs on Node 20, so this is the few lines of it the runner and the daemon need: `use` a resource with its disposer, `defer` a
 * step, `close` them all once.
 *
 * A disposer that fails does not stop the others: its error is handed to `onError` (the
 * execution's log) and closing goes on: one resource that cannot close must not keep the others
 * (a browser, an encoder, a connection) running.
 */
export class Scope {
  private readonly steps: Array<{ name: string; run: () => unknown }> = [];
  private closing: Promise<void> | undefined;

  constructor(private readonly onError: (error: unknown, name: string) => void) {}

  /** Keeps `resource` until the scope closes, then `dispose`s it (after whatever was opened later). */
  use<T>(name: string, resource: T, dispose: (resource: T) => unknown): T {
    this.defer(name, () => dispose(resource));
    return resource;
  }

  /** Runs `step` when the scope closes, before the steps deferred earlier. */
  defer(name: string, step: () => unknown): void {
    if (this.closing) throw new Error(`scope already closed: cannot defer ${name}`);
    this.steps.push({ name, run: step });
  }

  /** Runs every step, newest first, each once; idempotent (the same promise). Never rejects. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.run();
        } catch (error) {
          this.onError(error, step.name);
        }
      }
    })();
    return this.closing;
  }
}
