/** Requests to the administrative listener as an operator's client sends them, and the answers read back. */
import { request } from 'undici';

export type AdminAnswer = { status: number; body: string; type: string | undefined; json(): any };

export async function adminCall(url: string, options: { method?: 'GET' | 'POST'; apiKey?: string; json?: unknown; body?: string } = {}): Promise<AdminAnswer> {
  const headers: Record<string, string> = {};
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  const body = options.json !== undefined ? JSON.stringify(options.json) : options.body;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(url, { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  const type = res.headers['content-type'];
  return { status: res.statusCode, body: text, type: Array.isArray(type) ? type.join(', ') : type, json: () => JSON.parse(text) };
}

/** A query string from the defined members of `params`. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
