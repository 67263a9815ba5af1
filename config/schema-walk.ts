/**
 * Reading the configuration schema itself (zod v4 introspection through
 * `_zod.def` and the global metadata registry): what kind of value a setting
 * takes, its default, and the documentation metadata its helper attached.
 *
 * Used by the environment overrides (to coerce text to the kind a setting
 * expects, and to match a key's spelling) and by `config/docs.ts`. Knows only
 * the wrapper kinds the schemas in `config/schema/` use.
 */
import { z } from 'zod';

type AnySchema = z.core.$ZodType;
type Def = { type: string; [key: string]: unknown };

export type Kind = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'enum' | 'other';

export type Layer = {
  /** The schema under every wrapper. */
  readonly core: AnySchema;
  readonly kind: Kind;
  /** Metadata, outer wrappers winning over inner ones. */
  readonly meta: Readonly<Record<string, unknown>>;
  /** The default as an operator would write it, when there is one. */
  readonly defaultValue?: unknown;
  readonly hasDefault: boolean;
  readonly optional: boolean;
};

function defOf(schema: AnySchema): Def {
  return schema._zod.def as unknown as Def;
}

function kindOf(def: Def): Kind {
  switch (def.type) {
    case 'object':
    case 'array':
    case 'string':
    case 'number':
    case 'boolean':
    case 'enum':
      return def.type;
    default:
      return 'other';
  }
}

/** Peels optional/default/prefault/pipe wrappers, gathering what they say. */
export function unwrap(schema: AnySchema): Layer {
  let current = schema;
  const meta: Record<string, unknown> = {};
  let defaultValue: unknown;
  let hasDefault = false;
  let optional = false;
  for (;;) {
    const found = z.globalRegistry.get(current);
    if (found !== undefined) {
      for (const [key, value] of Object.entries(found)) if (!(key in meta)) meta[key] = value;
    }
    const def = defOf(current);
    if (def.type === 'optional' || def.type === 'nullable' || def.type === 'readonly') {
      if (def.type === 'optional') optional = true;
      current = def.innerType as AnySchema;
    } else if (def.type === 'default' || def.type === 'prefault') {
      if (!hasDefault) {
        hasDefault = true;
        defaultValue = def.defaultValue;
      }
      current = def.innerType as AnySchema;
    } else if (def.type === 'pipe') {
      current = def.in as AnySchema;
    } else {
      return { core: current, kind: kindOf(def), meta, defaultValue, hasDefault, optional };
    }
  }
}

/** Keys of an object schema, in declaration order. */
export function shapeOf(schema: AnySchema): Record<string, AnySchema> | null {
  const def = defOf(schema);
  return def.type === 'object' ? (def.shape as Record<string, AnySchema>) : null;
}

export function elementOf(schema: AnySchema): AnySchema | null {
  const def = defOf(schema);
  return def.type === 'array' ? (def.element as AnySchema) : null;
}

export function enumValues(schema: AnySchema): string[] {
  const def = defOf(schema);
  return def.type === 'enum' ? Object.values(def.entries as Record<string, string>) : [];
}

/** The key of `schema` spelled like `name` apart from case, if there is one. */
export function matchKey(schema: AnySchema, name: string): string | null {
  const shape = shapeOf(unwrap(schema).core);
  if (shape === null) return null;
  if (Object.hasOwn(shape, name)) return name;
  const lower = name.toLowerCase();
  return Object.keys(shape).find((key) => key.toLowerCase() === lower) ?? null;
}

/** The schema one step down (a key of an object, an element of a list), if the schema has that step. */
export function childOf(schema: AnySchema, segment: string): AnySchema | null {
  const core = unwrap(schema).core;
  const shape = shapeOf(core);
  if (shape !== null) {
    const key = matchKey(core, segment);
    return key === null ? null : (shape[key] ?? null);
  }
  const element = elementOf(core);
  return element !== null && /^\d+$/.test(segment) ? element : null;
}

/** Known keys of the object at `path` (list indexes included), for suggestions. */
export function keysAt(root: AnySchema, path: readonly PropertyKey[]): string[] {
  let current: AnySchema | null = root;
  for (const segment of path) {
    if (current === null) return [];
    current = childOf(current, String(segment));
  }
  if (current === null) return [];
  const shape = shapeOf(unwrap(current).core);
  return shape === null ? [] : Object.keys(shape);
}
