/**
 * A provider's answer body read whole, but never past a bound: a provider
 * answering without end must not fill the heap. Shared by the embedding and
 * chat clients. Importable from anywhere.
 */
import type { Dispatcher } from 'undici';

/** Thrown by `readCapped` when the body passes its bound (the body is destroyed). */
export const TOO_LARGE = Symbol('too-large');

export async function readCapped(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      body.destroy();
      throw TOO_LARGE;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
