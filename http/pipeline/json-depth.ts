/**
 * The one bound on how deeply a request's JSON body may nest, checked on the
 * raw bytes before `JSON.parse` and before any JSON-RPC or route handling
 * sees the value (docs/mcp-transport.md, docs/admin-api.md).
 *
 * Why: code that walks a parsed value recurses once per level (the MCP SDK's
 * message schemas do), and a body of ~5,000 nested arrays (30 KB, far under
 * the size limit) overflowed the stack inside it: an empty 500 (issue 30).
 * No input of either surface needs more than a handful of levels; 64 leaves
 * room for any tool argument or administrative write.
 *
 * The check is a scan, not a walk: one pass over the bytes counting `[` and
 * `{` outside strings, so it cannot overflow whatever the input. Malformed
 * JSON is left to the parser (the scan only answers "too deep or not").
 *
 * Pure. Imported through http/pipeline/request-body.ts.
 */

/** The deepest nesting of arrays and objects a request body may have (the envelope counts: `{"params":{"arguments":{…}}}` is three). */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether the JSON text in `bytes` nests at most `max` levels. UTF-8 keeps
 * every structural character a single byte below 0x80 (a multi-byte
 * sequence never contains one), so bytes are scanned as they came.
 */
export function nestsWithin(bytes: Uint8Array, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      if (byte === BACKSLASH) i += 1;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth += 1;
      if (depth > max) return false;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth -= 1;
  }
  return true;
}
