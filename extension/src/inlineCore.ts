/**
 * The pure half of the inline completer (ghost text): positions, what to insert, the context sent with a request,
 * the kernel-namespace summary, and the request life cycle — one request per document at a time, aborted (so the
 * server hears `$/cancelRequest`) on the next keystroke, on a newer request or on timeout, and an answer for an
 * older version of the document dropped.
 *
 * No JupyterLab imports: `test/inlineCore.test.ts` runs it under node. `inlineCompletion.ts` is the JupyterLab glue.
 */

import type { CompletionInlineItem, CompletionInlineParams, CompletionInlineResult } from './protocol';

export interface InlinePosition {
  line: number;
  character: number;
}

// -- positions ---------------------------------------------------------------------------------------------------

/** Code points in `text` (what the server, in Python, counts as characters). */
function codePoints(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
      }
    }
    n++;
  }
  return n;
}

/**
 * The ECA position of JS string index `offset` in `text`: 1-based line, 1-based character counted in code points
 * (the reference clients' convention; the server is Python, whose strings index code points).
 */
export function positionAt(text: string, offset: number): InlinePosition {
  const at = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < at; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, character: codePoints(text.slice(lineStart, at)) + 1 };
}

/** The JS string index of ECA position `position` in `text`, clamped to the text (the inverse of positionAt). */
export function offsetAt(text: string, position: InlinePosition): number {
  let start = 0;
  for (let line = 1; line < position.line; line++) {
    const newline = text.indexOf('\n', start);
    if (newline < 0) {
      return text.length;
    }
    start = newline + 1;
  }
  const end = text.indexOf('\n', start) < 0 ? text.length : text.indexOf('\n', start);
  let index = start;
  for (let n = 1; n < position.character && index < end; n++) {
    const c = text.charCodeAt(index);
    index += c >= 0xd800 && c <= 0xdbff && index + 1 < end ? 2 : 1;
  }
  return index;
}

/**
 * What to show as ghost text at `cursor` (a JS index into `text`) for `item`, whose `text` replaces its `range`:
 * JupyterLab inserts at the cursor, so the part of the range before the cursor must be what the suggestion starts
 * with, and the part after it what the suggestion ends with (both are cut off). Null when the item does not fit.
 */
export function insertTextFor(text: string, cursor: number, item: CompletionInlineItem): string | null {
  const start = offsetAt(text, item.range.start);
  const end = offsetAt(text, item.range.end);
  if (start > cursor || end < cursor) {
    return null;
  }
  let insert = item.text;
  const before = text.slice(start, cursor);
  if (!insert.startsWith(before)) {
    return null;
  }
  insert = insert.slice(before.length);
  const after = text.slice(cursor, end);
  if (after) {
    if (!insert.endsWith(after)) {
      return null;
    }
    insert = insert.slice(0, insert.length - after.length);
  }
  return insert || null;
}

// -- when to ask --------------------------------------------------------------------------------------------------

/** What may stand right of the cursor at "the end of a line": what JupyterLab closes for the user (brackets,
 * quotes) and punctuation — the engine's `_CLOSERS` (`_inline_text.py`), which it completes around. */
const CLOSERS = new Set([...")]}'\"`;:,. \r"]);

function lineAt(text: string, cursor: number): { before: string; after: string; start: number } {
  const at = Math.max(0, Math.min(cursor, text.length));
  const start = text.lastIndexOf('\n', at - 1) + 1;
  const newline = text.indexOf('\n', at);
  return { before: text.slice(start, at), after: text.slice(at, newline < 0 ? text.length : newline), start };
}

/**
 * Whether the cursor is at the end of its line as a user sees it: nothing right of it but closers. Typing `print(`
 * leaves `print(|)`; JupyterLab calls that the middle of the line and would not ask (unless `autoFillInMiddle`), so
 * the provider lets JupyterLab ask mid-line and refuses here what is really the middle (code right of the cursor).
 */
export function atLineEnd(text: string, cursor: number): boolean {
  return [...lineAt(text, cursor).after].every(ch => CLOSERS.has(ch));
}

/**
 * Whether to ask for ghost text on a line with nothing typed yet: the new line after Enter (indented under a `def`,
 * `for`, `if`… line, or not), with code on the line above. JupyterLab's inline completer never asks there by itself
 * — its automatic trigger skips a cursor with only whitespace left of it — so the provider asks (see
 * `BlankLineTrigger` in `inlineCompletion.ts`). Not after a blank line (two Enters end a block), not on an empty
 * cell, not with code right of the cursor.
 */
export function wantsBlankLineSuggestion(text: string, cursor: number): boolean {
  const { before, after, start } = lineAt(text, cursor);
  if (before.trim() || after.trim() || start === 0) {
    return false;
  }
  const above = text.slice(text.lastIndexOf('\n', start - 2) + 1, start - 1);
  return above.trim() !== '';
}

/**
 * The suggestion for an empty line under a line opening a block (`def f(x):`), indented into that block when the
 * line is not: JupyterLab's editor does not always indent after Enter (`def f(x):` + Enter stays at column 0 while
 * `def f():` indents), and a model shown an unindented line answers at column 0 — code that does not run. Every
 * line of the suggestion moves by the same amount; anything else is returned as it is.
 */
export function indentUnderOpener(text: string, cursor: number, insert: string): string {
  const { before, after, start } = lineAt(text, cursor);
  if (before.trim() || after.trim() || start === 0) {
    return insert;
  }
  const above = text.slice(text.lastIndexOf('\n', start - 2) + 1, start - 1);
  if (!/:\s*(#.*)?$/.test(above)) {
    return insert;
  }
  const aboveIndent = /^[ \t]*/.exec(above)![0];
  const target = aboveIndent + (aboveIndent.includes('\t') ? '\t' : '    ');
  const first = before + /^[ \t]*/.exec(insert)![0];
  if (first.length >= target.length || !insert.trim()) {
    return insert;
  }
  const extra = target.slice(first.length);
  return extra + insert.replace(/\n(?=[ \t]*\S)/g, '\n' + extra);
}

// -- context ------------------------------------------------------------------------------------------------------

/** One live variable of the kernel, as the inspection expression reports it (short keys keep the reply small). */
export interface KernelVariable {
  /** name */
  n: string;
  /** type name */
  t: string;
  /** a module's name */
  m?: string;
  /** a table's columns and their dtypes (the first 40) */
  c?: [string, string][];
  /** how many columns in all */
  nc?: number;
  /** shape of an array or table */
  s?: number[];
  /** length of a container or string */
  l?: number;
  /** value of a number or bool (repr, clipped) */
  v?: string;
}

/**
 * A Python function summarising the namespace it is given; run by {@link KERNEL_SUMMARY_EXPRESSION} in a private
 * dict, so it leaves nothing behind in the user's namespace. It looks at types, never calls a user object's own
 * code except `len` and a table's `columns`/`dtypes`/`shape`; a value that fails is skipped. The result is base64
 * (JSON inside), so the `text/plain` repr JupyterLab receives is trivial to undo.
 */
const KERNEL_SUMMARY_SOURCE = `
def run(ns):
    import base64, json
    out = []
    skip = ('In', 'Out', 'exit', 'quit', 'get_ipython')
    for k, v in list(ns.items())[-400:]:
        if k.startswith('_') or k in skip:
            continue
        try:
            t = type(v)
            d = {'n': k, 't': t.__name__}
            if t.__name__ == 'module':
                d['m'] = str(getattr(v, '__name__', ''))
            elif hasattr(t, 'columns') and hasattr(t, 'dtypes'):
                d['c'] = [[str(c), str(x)] for c, x in zip(list(v.columns[:40]), list(v.dtypes[:40]))]
                d['nc'] = len(v.columns)
            if hasattr(t, 'shape') and (hasattr(t, 'dtype') or hasattr(t, 'dtypes')):
                d['s'] = [int(x) for x in v.shape]
            elif t in (list, tuple, dict, set, frozenset, str, bytes):
                d['l'] = len(v)
            elif t in (int, float, bool, complex):
                d['v'] = repr(v)[:40]
            out.append(d)
        except Exception:
            pass
    return base64.b64encode(json.dumps(out[-80:]).encode()).decode()
`;

/**
 * The `user_expressions` entry of a silent `execute_request` that inspects the kernel's namespace: no execution
 * count, no history, no output. (A JSON string literal is a valid Python string literal.)
 */
export const KERNEL_SUMMARY_EXPRESSION =
  `(lambda g: (exec(${JSON.stringify(KERNEL_SUMMARY_SOURCE)}, g), g['run'](globals()))[1])({})`;

/** The variables in the `text/plain` of {@link KERNEL_SUMMARY_EXPRESSION}'s value (a quoted base64 string). */
export function parseKernelSummary(textPlain: string, decodeBase64: (data: string) => string): KernelVariable[] {
  const data = textPlain.trim().replace(/^['"]|['"]$/g, '');
  if (!/^[A-Za-z0-9+/=]*$/.test(data)) {
    return [];
  }
  try {
    const parsed = JSON.parse(decodeBase64(data));
    return Array.isArray(parsed) ? parsed.filter(v => v && typeof v.n === 'string' && typeof v.t === 'string') : [];
  } catch {
    return [];
  }
}

/** One line per variable, as Python comments: `df: DataFrame shape (100, 3); columns: a int64, b object`. */
export function describeVariables(variables: KernelVariable[], budget = 1500): string {
  const lines: string[] = [];
  let used = 0;
  // The newest names are the last ones; keep those when the budget runs out.
  for (const v of [...variables].reverse()) {
    let line = `# ${v.n}: ${v.t}`;
    if (v.m) {
      line += ` ${v.m}`;
    }
    if (v.v !== undefined) {
      line += ` = ${v.v}`;
    }
    if (v.s) {
      line += ` shape (${v.s.join(', ')})`;
    }
    if (v.l !== undefined) {
      line += ` len ${v.l}`;
    }
    if (v.c) {
      const more = v.nc !== undefined && v.nc > v.c.length ? `, … (${v.nc} in all)` : '';
      line += `; columns: ${v.c.map(([name, dtype]) => `${name} ${dtype}`).join(', ')}${more}`;
    }
    if (line.length > 400) {
      line = line.slice(0, 399) + '…';
    }
    if (used + line.length + 1 > budget) {
      break;
    }
    used += line.length + 1;
    lines.push(line);
  }
  return lines.reverse().join('\n');
}

export interface ContextCell {
  source: string;
  /** 1-based position in the notebook */
  index: number;
}

export interface ContextInput {
  /** The notebook's code cells before the one being edited, in order. */
  cells?: ContextCell[];
  variables?: KernelVariable[];
  /** Where the cells come from (the notebook's name). */
  notebook?: string;
}

export const CONTEXT_BUDGET = 4000;
const CELL_BUDGET = 1500;

/**
 * The `context` of a `completion/inline` request: the kernel's live variables, then the preceding cells — nearest
 * last, since the server keeps the end of the context when it has to cut — within `budget` characters.
 */
export function composeContext(input: ContextInput, budget = CONTEXT_BUDGET): string | undefined {
  const parts: string[] = [];
  const variables = input.variables?.length ? describeVariables(input.variables, Math.floor(budget * 0.4)) : '';
  if (variables) {
    parts.push(`# Live variables in the kernel:\n${variables}`);
  }
  let left = budget - parts.join('\n\n').length;
  const cells: string[] = [];
  for (const cell of [...(input.cells ?? [])].reverse()) {
    let source = cell.source.replace(/\s+$/, '');
    if (!source.trim()) {
      continue;
    }
    if (source.length > CELL_BUDGET) {
      source = source.slice(source.length - CELL_BUDGET);
      source = source.slice(source.indexOf('\n') + 1);
    }
    const block = `# In[${cell.index}]:\n${source}`;
    if (block.length + 2 > left) {
      break;
    }
    left -= block.length + 2;
    cells.unshift(block);
  }
  if (cells.length) {
    const where = input.notebook ? ` of ${input.notebook}` : '';
    parts.push(`# Earlier cells${where}:\n\n${cells.join('\n\n')}`);
  }
  const context = parts.join('\n\n');
  return context || undefined;
}

// -- requests -----------------------------------------------------------------------------------------------------

export interface InlineClient {
  completeInline(params: CompletionInlineParams, signal?: AbortSignal): Promise<CompletionInlineResult>;
}

/** Counters for tests and the benchmark (`window.__ecaInline.stats`). */
export interface InlineStats {
  /** `completion/inline` requests sent */
  requests: number;
  /** requests aborted before their answer (keystroke, newer request, timeout): each sent `$/cancelRequest` */
  cancelled: number;
  /** answers received */
  answered: number;
  /** answers dropped because the document had changed since */
  stale: number;
  /** answers that were suggestions */
  suggested: number;
  /** answers that were `error` results (`info` included) */
  errors: number;
}

export function newInlineStats(): InlineStats {
  return { requests: 0, cancelled: 0, answered: 0, stale: 0, suggested: 0, errors: 0 };
}

export type InlineOutcome =
  | { kind: 'suggestion'; insertText: string; id?: string }
  | { kind: 'error'; type: 'info' | 'warning' | 'error'; message: string }
  | { kind: 'none' };

export interface InlineRequest {
  /** The document being completed (a notebook cell's or a file's shared model): one request per document. */
  document: object;
  /** The text the request is for, and the cursor in it (a JS index). */
  text: string;
  cursor: number;
  path?: string;
  context?: string;
  /** Subscribes to the document's changes (returns the unsubscribe): any change that makes `text` stale cancels. */
  watch?: (onChange: (currentText: string) => void) => () => void;
  /** Give up (and cancel on the server) after this long; 0 or absent: never. */
  timeoutMs?: number;
}

interface Running {
  controller: AbortController;
  version: number;
}

/**
 * Runs `completion/inline` requests: one per document, each aborted on the next keystroke in its document (the
 * transport then sends `$/cancelRequest`), by a newer request for the same document, or on timeout; an answer is
 * used only when its `docVersion` is the document's current version.
 */
export class InlineRequests {
  readonly stats: InlineStats = newInlineStats();
  private readonly _running = new WeakMap<object, Running>();
  private readonly _versions = new WeakMap<object, number>();

  constructor(
    private readonly _client: InlineClient,
    private readonly _clock: {
      setTimeout(fn: () => void, ms: number): unknown;
      clearTimeout(handle: unknown): void;
    } = { setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: h => clearTimeout(h as any) }
  ) {}

  /** The document's current version (bumped by every request and every cancellation). */
  version(document: object): number {
    return this._versions.get(document) ?? 0;
  }

  /** Abort the document's pending request, if any (a keystroke). */
  cancel(document: object): void {
    const running = this._running.get(document);
    if (running) {
      this._running.delete(document);
      this._bump(document);
      running.controller.abort();
    }
  }

  async request(request: InlineRequest): Promise<InlineOutcome> {
    const { document } = request;
    this.cancel(document); // a newer request supersedes the older one at once
    const version = this._bump(document);
    const controller = new AbortController();
    const running: Running = { controller, version };
    this._running.set(document, running);
    const unwatch = request.watch?.(current => {
      if (current !== request.text && this._running.get(document) === running) {
        this.cancel(document);
      }
    });
    const timer =
      request.timeoutMs && request.timeoutMs > 0
        ? this._clock.setTimeout(() => {
            if (this._running.get(document) === running) {
              this.cancel(document);
            }
          }, request.timeoutMs)
        : null;
    const params: CompletionInlineParams = {
      docText: request.text,
      docVersion: version,
      position: positionAt(request.text, request.cursor)
    };
    if (request.path) {
      params.path = request.path;
    }
    if (request.context) {
      params.context = request.context;
    }
    this.stats.requests += 1;
    try {
      const result = await this._client.completeInline(params, controller.signal);
      this.stats.answered += 1;
      if (controller.signal.aborted || this.version(document) !== version) {
        this.stats.stale += 1;
        return { kind: 'none' };
      }
      if (result?.error) {
        this.stats.errors += 1;
        return { kind: 'error', type: result.error.type, message: result.error.message };
      }
      for (const item of result?.items ?? []) {
        if (item.docVersion !== version) {
          this.stats.stale += 1;
          continue;
        }
        const fitting = insertTextFor(request.text, request.cursor, item);
        const insertText = fitting && indentUnderOpener(request.text, request.cursor, fitting);
        if (insertText) {
          this.stats.suggested += 1;
          return item.id ? { kind: 'suggestion', insertText, id: item.id } : { kind: 'suggestion', insertText };
        }
      }
      return { kind: 'none' };
    } catch (error) {
      if (controller.signal.aborted) {
        this.stats.cancelled += 1;
        return { kind: 'none' };
      }
      throw error;
    } finally {
      unwatch?.();
      if (timer !== null) {
        this._clock.clearTimeout(timer);
      }
      if (this._running.get(document) === running) {
        this._running.delete(document);
      }
    }
  }

  private _bump(document: object): number {
    const next = this.version(document) + 1;
    this._versions.set(document, next);
    return next;
  }
}

/**
 * Whether to show a failure: the same message at most once a minute (a missing key or a down server would otherwise
 * mark every pause in typing, and each mark takes the next Tab).
 */
export class WarningThrottle {
  private readonly _shown = new Map<string, number>();

  constructor(
    private readonly _intervalMs = 60000,
    private readonly _now: () => number = () => Date.now()
  ) {}

  shouldShow(message: string): boolean {
    const now = this._now();
    const last = this._shown.get(message);
    if (last !== undefined && now - last < this._intervalMs) {
      return false;
    }
    if (this._shown.size > 50) {
      this._shown.clear();
    }
    this._shown.set(message, now);
    return true;
  }
}
