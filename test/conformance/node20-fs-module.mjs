/** `node:fs` plus the `globSync` the conformance suite imports (node20-fs-glob.mjs). */
export * from 'node:fs';
export { default } from 'node:fs';

export function globSync() {
  throw new Error('globSync needs Node 22; the conformance scenarios run by this project do not use it');
}
