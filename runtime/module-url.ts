/**
 * Resolves the URL of a module that a worker thread will load. Sources are
 * written with `.ts` extensions and run under tsx in development and tests;
 * `npm run build` emits `.js` beside the same relative paths. A worker entry is
 * a string, not an import, so the compiler cannot rewrite it: this does.
 */
export function moduleUrl(relative: string, base: string | URL): URL {
  const baseHref = typeof base === 'string' ? base : base.href;
  const compiled = baseHref.endsWith('.js');
  const path = compiled ? relative.replace(/\.ts$/, '.js') : relative;
  return new URL(path, baseHref);
}
