/**
 * The import graph of the source tree, read with the TypeScript parser: for
 * every module, what it loads (static imports and re-exports that are not
 * type-only, dynamic `import()` and `require()` of a literal, and module
 * URLs handed to a worker or pool: `moduleUrl('…', import.meta.url)`,
 * `new URL('….ts', import.meta.url)` and `import.meta.resolve('…')`) and
 * what it only names as a type. Used by the architecture tests.
 *
 * Type-only means erased by the compiler. tsconfig.json sets
 * `verbatimModuleSyntax`, under which only `import type` / `export type`
 * (and `import('x').T` in a type) are erased: `import { type X } from 'x'`
 * is emitted as `import {} from 'x'` and still loads `x`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export type Edge = {
  /** Repository-relative path of the importing module. */
  from: string;
  /** Repository-relative path of the target, or the package name for a bare specifier. */
  to: string;
  /** A package (`zod`, `node:fs`) rather than a file of the tree. */
  external: boolean;
  /** Erased at run time: `import type`, `export type`, or a type position (`import('x').T`). */
  typeOnly: boolean;
  /** Loaded by URL (a worker or pool entry), not imported. */
  byUrl: boolean;
  line: number;
};

const SOURCE = /\.(ts|mts|mjs)$/;

export function sourceFiles(root: string, folders: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(relative(root, path));
    }
  };
  for (const folder of folders) {
    try {
      walk(join(root, folder));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  return out.sort();
}

/**
 * `import type …` only. Under verbatimModuleSyntax an import whose every
 * binding is `type` (`import { type X } from 'x'`) keeps its module specifier
 * (`import {} from 'x'`): a load.
 */
function typeOnlyImport(node: ts.ImportDeclaration): boolean {
  return node.importClause?.isTypeOnly === true; // `import './x.ts'` has no clause and runs the module
}

/** `export type { … } from …` only (`export { type X } from 'x'` is emitted as `export {} from 'x'`). */
function typeOnlyExport(node: ts.ExportDeclaration): boolean {
  return node.isTypeOnly;
}

/** `import.meta.resolve('x')`: a module located to be loaded elsewhere (a worker, a data: URL bootstrap). */
function isImportMetaResolve(node: ts.CallExpression): boolean {
  const callee = node.expression;
  return (
    ts.isPropertyAccessExpression(callee) &&
    callee.name.text === 'resolve' &&
    ts.isMetaProperty(callee.expression) &&
    callee.expression.keywordToken === ts.SyntaxKind.ImportKeyword
  );
}

const literalArgument = (node: ts.CallExpression): string | null => {
  const first = node.arguments[0];
  return first !== undefined && ts.isStringLiteralLike(first) ? first.text : null;
};

/** `moduleUrl('x', import.meta.url)` or `new URL('x.ts', import.meta.url)`: a module loaded by a worker or pool. */
function urlReference(node: ts.Node): string | null {
  const call = ts.isCallExpression(node) || ts.isNewExpression(node) ? node : null;
  if (call === null) return null;
  const callee = call.expression;
  const name = ts.isIdentifier(callee) ? callee.text : null;
  const args = call.arguments ?? ts.factory.createNodeArray();
  if ((name !== 'moduleUrl' && name !== 'URL') || args.length !== 2) return null;
  const [first, second] = [args[0]!, args[1]!];
  if (!ts.isStringLiteral(first) || second.getText() !== 'import.meta.url') return null;
  return name === 'URL' && !SOURCE.test(first.text) ? null : first.text;
}

export function edgesOf(root: string, file: string): Edge[] {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const add = (specifier: string, node: ts.Node, typeOnly: boolean, byUrl: boolean): void => {
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    const relativeSpecifier = specifier.startsWith('.');
    const to = relativeSpecifier ? relative(root, resolve(dirname(join(root, file)), specifier)) : specifier;
    edges.push({ from: file, to, external: !relativeSpecifier, typeOnly, byUrl, line });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) add(node.moduleSpecifier.text, node, typeOnlyImport(node), false);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      add(node.moduleSpecifier.text, node, typeOnlyExport(node), false);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && literalArgument(node) !== null)
      add(literalArgument(node)!, node, false, false);
    // `require('x')` of a createRequire: a load like any import.
    else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require' && literalArgument(node) !== null)
      add(literalArgument(node)!, node, false, false);
    else if (ts.isCallExpression(node) && isImportMetaResolve(node) && literalArgument(node) !== null) add(literalArgument(node)!, node, false, true);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal))
      add(node.argument.literal.text, node, true, false);
    else {
      const url = urlReference(node);
      if (url !== null) add(url, node, false, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}
