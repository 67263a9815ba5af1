/**
 * The engine: rspamd's normal worker, `POST /checkv2` with the raw message
 * (its HTTP protocol, https://rspamd.com/doc/developers/protocol.html), over
 * undici with a pool of its own. One request per message, with a deadline
 * (`Spam:Engine:Timeout`); no retry inside a call: mail left unclassified
 * is tried again later by the actor, with backoff. Calls pass through a
 * circuit (runtime/circuit.ts): after `FailuresToOpen` failures in a row
 * they are refused at once for `CoolDown`, then one trial goes out.
 *
 * What is kept of the answer: the score and the required score (rspamd's
 * reject score, the mapping's denominator) and the action. A failure is
 * named by class (`refused`, `timeout`, `reset`, `status-<n>`, `malformed`,
 * `circuit-open`): never the message, the answer body or the address.
 *
 * Importable from `actors/spam/` only.
 */
import { z } from 'zod';
import { Circuit, type CircuitHealth, type FailureClass } from '../../runtime/circuit.ts';
import type { Clock } from '../../runtime/clock.ts';
import { readCapped, TOO_LARGE } from '../../runtime/http-retry/read-capped.ts';
import { LazyAgent } from '../../runtime/http-retry/undici.ts';

/** The answer is a few kilobytes of symbols; more is no answer of rspamd's. */
const MAX_ANSWER_BYTES = 1024 * 1024;

const CheckAnswer = z.object({ score: z.number(), required_score: z.number(), action: z.string() });

export type EngineOutcome = { ok: true; score: number; requiredScore: number; action: string } | { ok: false; failure: FailureClass };

export type EngineOptions = { address: string; timeoutMs: number; failuresToOpen: number; coolDownMs: number; clock: Clock };

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);
const REFUSED_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export class RspamdClient {
  private readonly url: URL;
  private readonly options: EngineOptions;
  private readonly circuit: Circuit;
  private readonly agent: LazyAgent;

  constructor(options: EngineOptions) {
    this.options = options;
    const base = new URL(options.address);
    base.pathname = `${base.pathname.replace(/\/+$/, '')}/checkv2`;
    this.url = base;
    this.circuit = new Circuit({ failuresToOpen: options.failuresToOpen, coolDownMs: options.coolDownMs }, options.clock);
    // undici loads on the first check: with spam off the thread never loads it.
    this.agent = new LazyAgent({ connect: { timeout: options.timeoutMs } });
  }

  health(): CircuitHealth {
    return this.circuit.health();
  }

  async check(raw: Uint8Array, signal?: AbortSignal): Promise<EngineOutcome> {
    if (!this.circuit.admit()) return { ok: false, failure: 'circuit-open' };
    const outcome = await this.call(raw, signal);
    if (outcome.ok) this.circuit.succeeded();
    else if (outcome.failure === 'aborted') this.circuit.released();
    else this.circuit.failed(outcome.failure);
    return outcome;
  }

  private async call(raw: Uint8Array, signal?: AbortSignal): Promise<EngineOutcome> {
    const deadline = AbortSignal.timeout(this.options.timeoutMs);
    try {
      const { agent, request } = await this.agent.get();
      const res = await request(this.url, {
        method: 'POST',
        body: raw,
        headers: { 'content-type': 'message/rfc822' },
        dispatcher: agent,
        signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
      });
      if (res.statusCode !== 200) {
        await res.body.dump().catch(() => undefined);
        return { ok: false, failure: `status-${res.statusCode}` };
      }
      const parsed = CheckAnswer.safeParse(JSON.parse(await readCapped(res.body, MAX_ANSWER_BYTES)));
      if (!parsed.success) return { ok: false, failure: 'malformed' };
      return { ok: true, score: parsed.data.score, requiredScore: parsed.data.required_score, action: parsed.data.action };
    } catch (err) {
      if (signal?.aborted) return { ok: false, failure: 'aborted' };
      if (err === TOO_LARGE || err instanceof SyntaxError) return { ok: false, failure: 'malformed' };
      if (deadline.aborted) return { ok: false, failure: 'timeout' };
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return { ok: false, failure: 'timeout' };
      if (typeof code === 'string' && REFUSED_CODES.has(code)) return { ok: false, failure: 'refused' };
      return { ok: false, failure: 'reset' };
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}
