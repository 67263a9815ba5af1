/**
 * A minimal DER reader (ITU-T X.690), for the two things Node's crypto does
 * not expose: a certificate's key usage extension, and the structure of a
 * PKCS#12 bundle (`pkcs12.ts`). Definite lengths and one-byte tags only: that
 * is all DER (and every bundle OpenSSL writes) uses. Malformed input throws
 * `DerError`, whose message names the rule broken, never the bytes.
 */

export class DerError extends Error {}

export type DerNode = {
  /** The identifier octet: class, constructed bit and tag number. */
  readonly tag: number;
  readonly content: Buffer;
  /** The whole node: identifier, length and content. */
  readonly raw: Buffer;
  /** Offset just past this node in the buffer it was read from. */
  readonly end: number;
};

export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  sequence: 0x30,
  set: 0x31,
  /** `[n]` context-specific, constructed (EXPLICIT or IMPLICIT over a constructed type). */
  context: (n: number): number => 0xa0 | n,
  /** `[n]` context-specific, primitive (IMPLICIT over a primitive type). */
  contextPrimitive: (n: number): number => 0x80 | n,
} as const;

/** The node starting at `offset` of `buf`. */
export function readNode(buf: Buffer, offset = 0): DerNode {
  if (offset + 2 > buf.length) throw new DerError('truncated');
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tags are not used here');
  let length = buf[offset + 1]!;
  let at = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    // 0x80 alone is BER's indefinite length, which DER forbids; more than 4 length octets cannot fit a buffer anyway.
    if (octets === 0 || octets > 4 || at + octets > buf.length) throw new DerError('unsupported length');
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + buf[at + i]!;
    at += octets;
  }
  const end = at + length;
  if (end > buf.length) throw new DerError('truncated');
  return { tag, content: buf.subarray(at, end), raw: buf.subarray(offset, end), end };
}

/** The one node filling `buf` exactly. */
export function readWhole(buf: Buffer): DerNode {
  const node = readNode(buf);
  if (node.end !== buf.length) throw new DerError('trailing bytes');
  return node;
}

/** The nodes inside a constructed node. */
export function childrenOf(node: DerNode): DerNode[] {
  if ((node.tag & 0x20) === 0) throw new DerError('not a constructed node');
  const out: DerNode[] = [];
  for (let at = 0; at < node.content.length; ) {
    const child = readNode(node.content, at);
    out.push(child);
    at = child.end;
  }
  return out;
}

/** `node` after checking its tag. */
export function expect(node: DerNode | undefined, tag: number): DerNode {
  if (node === undefined || node.tag !== tag) throw new DerError(`expected tag 0x${tag.toString(16)}`);
  return node;
}

/** The children of a node that must carry `tag`. */
export function childrenWith(node: DerNode | undefined, tag: number): DerNode[] {
  return childrenOf(expect(node, tag));
}

/** Dotted form of an OBJECT IDENTIFIER. */
export function oidOf(node: DerNode | undefined): string {
  const bytes = expect(node, TAG.oid).content;
  if (bytes.length === 0) throw new DerError('empty object identifier');
  const arcs: number[] = [];
  let value = 0;
  for (const byte of bytes) {
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    }
  }
  // The first subidentifier packs the first two arcs as 40 * first + second.
  const first = arcs[0]!;
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...arcs.slice(1)].join('.');
}

/** A non-negative INTEGER small enough for a number (iteration counts, versions). */
export function smallInteger(node: DerNode | undefined): number {
  const bytes = expect(node, TAG.integer).content;
  if (bytes.length === 0 || bytes.length > 6 || (bytes[0]! & 0x80) !== 0) throw new DerError('integer out of range');
  return bytes.reduce((n, byte) => n * 256 + byte, 0);
}

/**
 * Bytes of an OCTET STRING whose primitive tag is `tag` (0x04, or an IMPLICIT
 * context tag): primitive, or in BER's constructed form (the tag with 0x20
 * set, the bytes in OCTET STRING pieces), which some writers use.
 */
export function octets(node: DerNode | undefined, tag: number): Buffer {
  if (node?.tag === tag) return node.content;
  const pieces = childrenWith(node, tag | 0x20);
  return Buffer.concat(pieces.map((piece) => expect(piece, TAG.octetString).content));
}
