/** Resolution hook of node20-fs-glob.mjs: `fs` imported by the conformance suite resolves to node20-fs-module.mjs. */
const SUITE = '/node_modules/@modelcontextprotocol/conformance/';
const SHIM = new URL('./node20-fs-module.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes(SUITE)) return { url: SHIM, shortCircuit: true };
  return nextResolve(specifier, context);
}
