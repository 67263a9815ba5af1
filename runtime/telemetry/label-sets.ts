/**
 * Label sets made once per combination of values and frozen, for what
 * records on every request (http/pipeline/exchange-telemetry.ts,
 * http/mcp/tool-call-telemetry.ts): no object built per point, and the
 * service's own histograms find a frozen set's series by identity
 * (own-histograms.ts) rather than by a key built from its labels.
 *
 * The values must come from a bounded set (templates, methods, codes,
 * configured names), as every label of the catalogue does: one set is kept
 * for each combination, for the life of the process.
 *
 * Importable from every layer; loads nothing.
 */
import type { Attributes } from '@opentelemetry/api';

type Node = Map<unknown, Node | Attributes>;

export class LabelSets<V extends readonly unknown[]> {
  private readonly root: Node = new Map();
  private readonly make: (values: V) => Attributes;

  /** `make` builds the set for values seen the first time. */
  constructor(make: (values: V) => Attributes) {
    this.make = make;
  }

  /** The frozen set for these values (one per distinct combination). */
  of(values: V): Attributes {
    let node = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = node.get(values[i]) as Node | undefined;
      if (next === undefined) {
        next = new Map();
        node.set(values[i], next);
      }
      node = next;
    }
    let set = node.get(values[last]) as Attributes | undefined;
    if (set === undefined) {
      set = Object.freeze(this.make(values));
      node.set(values[last], set);
    }
    return set;
  }
}
