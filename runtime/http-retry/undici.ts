/**
 * undici, loaded on the first request and not with the module that sends it:
 * the spam engine's client, the embedding and chat providers and the OAuth
 * token refresh are imported at every start of their thread, but most
 * deployments never send through them (undici is ≈ 4 MiB of heap in each
 * thread that loads it). Importable from anywhere.
 */
import type { Agent } from 'undici';

type Undici = typeof import('undici');

let loading: Promise<Undici> | undefined;

/** The undici module, imported once per thread. */
export function undici(): Promise<Undici> {
  loading ??= import('undici');
  return loading;
}

/**
 * A client's own connection pool, made on its first request. Closing one
 * never made does nothing; asking after closing throws, as undici's closed
 * agent would.
 */
export class LazyAgent {
  readonly #options: Agent.Options;
  #agent: Agent | null = null;
  #closed = false;

  constructor(options: Agent.Options) {
    this.#options = options;
  }

  /** The pool and undici's `request`, loading undici when first asked. */
  async get(): Promise<{ agent: Agent; request: Undici['request'] }> {
    const u = await undici();
    if (this.#closed) throw new u.errors.ClientClosedError();
    this.#agent ??= new u.Agent(this.#options);
    return { agent: this.#agent, request: u.request };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#agent?.close();
  }

  async destroy(): Promise<void> {
    this.#closed = true;
    await this.#agent?.destroy();
  }
}
