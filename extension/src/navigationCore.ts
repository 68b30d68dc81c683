/**
 * The pure part of answering `editor/getDefinition` / `editor/getReferences` from JupyterLab's language servers
 * (lspNavigation.ts): which Jupyter path a server URI names, which language a file is, and the LSP answer turned into
 * ECA locations. Kept free of JupyterLab imports so the node unit tests can run it.
 *
 * ECA positions are 1-based (line and UTF-16 character), LSP's 0-based: the conversion happens here, both ways.
 */

import type { EditorLocation, Position } from './protocol';

/** The result's `status` as the server reads it: `no-server` / `error` make it answer from its content index. */
export type NavigationStatus = 'success' | 'starting' | 'no-server' | 'error';

export interface NavigationAnswer {
  status: NavigationStatus;
  locations?: EditorLocation[];
  message?: string;
}

export interface LspPosition {
  line: number;
  character: number;
}

interface LspRange {
  start: LspPosition;
  end: LspPosition;
}

/**
 * The path of *uri* relative to the Jupyter root *rootUri* (both `file://` URIs), decoded; null when it is not a file
 * under that root (the lab can only open what its contents API serves).
 */
export function pathUnderRoot(uri: string, rootUri: string | null | undefined): string | null {
  if (!rootUri || !uri.startsWith('file:') || !rootUri.startsWith('file:')) {
    return null;
  }
  const norm = (value: string) => {
    // file:/x, file://x and file:///x all name /x; percent-escapes compare decoded.
    let path = value.replace(/^file:(\/\/)?/, '');
    if (!path.startsWith('/')) {
      path = '/' + path;
    }
    try {
      path = decodeURIComponent(path);
    } catch {
      // an ill-formed escape stays as written
    }
    return path.replace(/\/+$/, '');
  };
  const root = norm(rootUri);
  const path = norm(uri);
  if (path === root || !path.startsWith(root + '/')) {
    return null;
  }
  return path.slice(root.length + 1);
}

/** Language ids as jupyter-lsp's server specs name them, by file extension (the lab's file type decides the rest). */
const LANGUAGES: Record<string, string> = {
  py: 'python',
  pyi: 'python',
  r: 'r',
  js: 'javascript',
  mjs: 'javascript',
  jsx: 'javascript',
  ts: 'typescript',
  tsx: 'typescript',
  sh: 'bash',
  bash: 'bash',
  jl: 'julia',
  sql: 'sql',
  yaml: 'yaml',
  yml: 'yaml',
  json: 'json',
  md: 'markdown',
  tex: 'latex',
  css: 'css',
  html: 'html'
};

export function fileExtension(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
}

/** The language id of *path* for matching a language server, or null when unknown. */
export function languageOf(path: string, fileTypeName?: string | null): string | null {
  return LANGUAGES[fileExtension(path)] ?? (fileTypeName ? fileTypeName.toLowerCase() : null);
}

/** An ECA (1-based) position as LSP's (0-based). */
export function toLspPosition(position: Position): LspPosition {
  return { line: Math.max(0, position.line - 1), character: Math.max(0, position.character - 1) };
}

function fromLspRange(range: LspRange): EditorLocation['range'] {
  return {
    start: { line: range.start.line + 1, character: range.start.character + 1 },
    end: { line: range.end.line + 1, character: range.end.character + 1 }
  };
}

/**
 * The locations of an LSP `textDocument/definition` or `textDocument/references` answer: `Location`, `Location[]`,
 * `LocationLink[]` (its target, the name's range) or null.
 */
export function toEditorLocations(answer: unknown): EditorLocation[] {
  const items = answer == null ? [] : Array.isArray(answer) ? answer : [answer];
  const locations: EditorLocation[] = [];
  for (const item of items as any[]) {
    if (item && typeof item.targetUri === 'string') {
      const range = item.targetSelectionRange ?? item.targetRange;
      if (range) {
        locations.push({ uri: item.targetUri, range: fromLspRange(range) });
      }
    } else if (item && typeof item.uri === 'string' && item.range) {
      locations.push({ uri: item.uri, range: fromLspRange(item.range) });
    }
  }
  return locations;
}
