/**
 * The context manager every thread installs with traces on: the active
 * context lasts for the synchronous run of `context.with(ctx, fn)` and no
 * longer. It does not follow awaits, by choice: the AsyncLocalStorage
 * manager that does hooks every promise of the thread on Node 20, which was
 * most of what traces cost a call (docs/performance.md "Telemetry").
 *
 * What must outlive an await carries its parent explicitly instead
 * (docs/operations.md "Traces"): the exchange hands its span's context to
 * its handler, the MCP call to its tool's asks, an actor's `handle <kind>`
 * span to its `ActorContext` (`ctx.trace`), and the provider, SMTP and IMAP
 * spans take theirs as an argument. `context.active()` is then right only in
 * the synchronous stretch at the start of a `with` — enough for the code that
 * opens a span and asks at once.
 *
 * Loaded only when telemetry is on.
 */
import { type Context, type ContextManager, ROOT_CONTEXT } from '@opentelemetry/api';

export class SynchronousContextManager implements ContextManager {
  private current: Context = ROOT_CONTEXT;

  active(): Context {
    return this.current;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    const previous = this.current;
    this.current = context;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.current = previous;
    }
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    const manager = this;
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(context, () => fn.apply(this, args));
    } as unknown as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.current = ROOT_CONTEXT;
    return this;
  }
}
