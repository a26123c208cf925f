import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/*
 * The import graph of src/ and cli/ must have no circles, type-only imports included: modules load
 * in one order, and a layer never reaches back up, not even to name a type (the domain names
 * DomainDeps, never the composition root's Core). The same holds between folders: the layering
 * drawn in docs/architecture.md, where every folder imports only the folders below it.
 */

const ROOT = resolve(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

interface Edge {
  to: string;
  typeOnly: boolean;
}

/** Static imports and re-exports of project files; dynamic import() loads lazily and forms no load-order circle. */
function importsOf(file: string, known: ReadonlySet<string>): Edge[] {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest);
  const edges: Edge[] = [];
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined;
    let typeOnly = false;
    if (ts.isImportDeclaration(statement)) {
      specifier = statement.moduleSpecifier;
      const clause = statement.importClause;
      const named = clause?.namedBindings;
      typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined && named !== undefined && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)));
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier) {
      specifier = statement.moduleSpecifier;
      typeOnly = statement.isTypeOnly;
    }
    if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue;
    const to = relative(ROOT, resolve(ROOT, dirname(file), specifier.text.replace(/\.js$/, '.ts')));
    if (known.has(to)) edges.push({ to, typeOnly });
  }
  return edges;
}

/** Strongly connected components of more than one file (Tarjan), or a file importing itself. */
function circles(graph: ReadonlyMap<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** A file's folder one level below src/ or cli/ (src/domain/orders/x.ts is in src/domain); files at their root are the root's. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/** Folder → folders it imports from, each edge with one file import that makes it (to name in a failure). */
function folderGraph(edges: ReadonlyMap<string, Edge[]>): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const [file, out] of edges) {
    const from = folderOf(file);
    const targets = graph.get(from) ?? graph.set(from, new Map()).get(from)!;
    for (const { to } of out) {
      const folder = folderOf(to);
      if (folder !== from && !targets.has(folder)) targets.set(folder, `${file} → ${to}`);
    }
  }
  return graph;
}

describe('import graph of src/ and cli/', () => {
  const files = [...sourceFiles('src'), ...sourceFiles('cli')];
  const known = new Set(files);
  const edges = new Map(files.map((file) => [file, importsOf(file, known)]));
  const graph = (withTypes: boolean) => new Map([...edges].map(([file, out]) => [file, out.filter((e) => withTypes || !e.typeOnly).map((e) => e.to)]));

  it('reads the project (the checker sees the imports it should)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(edges.get('src/app/operation-table.ts')?.map((e) => e.to)).toContain('src/operations/domain-table.ts');
  });

  it('has no circle of runtime imports', () => {
    expect(circles(graph(false))).toEqual([]);
  });

  it('has no circle of type-only imports either', () => {
    expect(circles(graph(true))).toEqual([]);
  });

  it('has no circle between folders, type-only imports included', () => {
    const folders = folderGraph(edges);
    const found = circles(new Map([...folders].map(([folder, out]) => [folder, [...out.keys()]])));
    // A failure names each import that closes the circle, so the file to move or the dependency to narrow is plain.
    const named = found.map((members) => members.flatMap((from) => [...folders.get(from)!].filter(([to]) => members.includes(to)).map(([, via]) => via)));
    expect(named).toEqual([]);
  });

  it('reads the folders (sub-folders belong to their folder, root files to the root)', () => {
    const folders = folderGraph(edges);
    expect(folders.get('src/domain')?.has('src/store')).toBe(true);
    expect(folders.get('src/domain')?.has('src/domain')).toBe(false);
    expect(folderOf('src/domain/orders/read.ts')).toBe('src/domain');
    expect(folderOf('src/main.ts')).toBe('src');
    expect(folderOf('cli/audit/plan.ts')).toBe('cli/audit');
  });

  it('finds a circle when there is one', () => {
    expect(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
    expect(circles(new Map([['a', ['a']]]))).toEqual([['a']]);
  });
});
