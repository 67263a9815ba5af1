/**
 * The canonical form of an OAuth `Resource` (docs/security.md "OAuth access
 * tokens"): scheme and host lower-cased, the default port dropped, and a
 * trailing slash dropped only where the path is empty. The form is what is
 * published in the metadata document and compared with a token's `aud`.
 */

export function canonicalResource(written: string): string {
  // URL lower-cases scheme and host and drops the default port; it writes an
  // empty path as '/', which is the one trailing slash the canonical form drops.
  const url = new URL(written);
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}
