/**
 * The pure half of "Rewrite with ECA…": a line diff of the original and the rewritten text (shown while the rewrite
 * streams, in the panel's unified-diff view), the rewrite's state as `rewrite/contentReceived` contents arrive, and
 * where to apply the result when the user accepts it.
 *
 * The diff is a plain longest-common-subsequence over lines after trimming the common head and tail: selections and
 * cells are small, and a guard falls back to "all removed, all added" for a huge middle — no dependency needed.
 * No JupyterLab imports: `test/rewriteCore.test.ts` runs it under node; `rewrite.ts` is the JupyterLab glue.
 */

import type { RewriteContentReceivedParams } from './protocol';

export type DiffOp = ' ' | '-' | '+';

export interface DiffLine {
  op: DiffOp;
  text: string;
}

/** The biggest middle (lines × lines) diffed exactly; beyond it the middle is shown as replaced wholesale. */
const MAX_CELLS = 1_000_000;

function splitLines(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

/** The line-by-line edit from `before` to `after` (context, removed and added lines, in order). */
export function diffLines(before: string, after: string): DiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) {
    head++;
  }
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) {
    tail++;
  }
  const out: DiffLine[] = a.slice(0, head).map(text => ({ op: ' ' as DiffOp, text }));
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  if (am.length * bm.length > MAX_CELLS) {
    out.push(...am.map(text => ({ op: '-' as DiffOp, text })), ...bm.map(text => ({ op: '+' as DiffOp, text })));
  } else {
    // lcs[i][j]: the longest common subsequence of am[i:] and bm[j:]
    const n = am.length;
    const m = bm.length;
    const lcs: Uint32Array[] = [];
    for (let i = 0; i <= n; i++) {
      lcs.push(new Uint32Array(m + 1));
    }
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = am[i] === bm[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (am[i] === bm[j]) {
        out.push({ op: ' ', text: am[i] });
        i++;
        j++;
      } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
        out.push({ op: '-', text: am[i++] });
      } else {
        out.push({ op: '+', text: bm[j++] });
      }
    }
    out.push(...am.slice(i).map(text => ({ op: '-' as DiffOp, text })));
    out.push(...bm.slice(j).map(text => ({ op: '+' as DiffOp, text })));
  }
  out.push(...a.slice(a.length - tail).map(text => ({ op: ' ' as DiffOp, text })));
  return groupChanges(out);
}

/** Within each run of changes, removed lines first, then added ones (how diffs are read). */
function groupChanges(lines: DiffLine[]): DiffLine[] {
  const out: DiffLine[] = [];
  let removed: DiffLine[] = [];
  let added: DiffLine[] = [];
  const flush = () => {
    out.push(...removed, ...added);
    removed = [];
    added = [];
  };
  for (const line of lines) {
    if (line.op === '-') {
      removed.push(line);
    } else if (line.op === '+') {
      added.push(line);
    } else {
      flush();
      out.push(line);
    }
  }
  flush();
  return out;
}

/**
 * The diff to show while the rewrite streams: the new text so far against the part of the original it has reached —
 * as many lines as it has, or up to the last original line it already matched — and `…` for the rest, which is
 * not rewritten yet (not removed). The final diff ({@link unifiedDiff}) replaces it once the rewrite is over.
 */
export function streamingDiff(original: string, partial: string): string {
  const before = splitLines(original);
  const after = splitLines(partial);
  let reached = after.length;
  let index = 0;
  for (const line of diffLines(original, partial)) {
    if (line.op !== '+') {
      index++;
    }
    if (line.op === ' ') {
      reached = Math.max(reached, index);
    }
  }
  reached = Math.min(reached, before.length);
  const shown = diffLines(before.slice(0, reached).join('\n'), partial).map(l => `${l.op}${l.text}`);
  if (reached < before.length) {
    shown.push(' …');
  }
  return shown.join('\n');
}

export interface DiffSummary {
  /** Unified-diff text (`DiffView` colours it by the first character of each line). */
  diff: string;
  added: number;
  removed: number;
}

/**
 * `before` → `after` as unified-diff lines: every line when the texts are short, else hunks with `context` lines
 * around each change and `@@` headers (numbered from `firstLine`, the original's first line in its document).
 */
export function unifiedDiff(before: string, after: string, context = 3, firstLine = 1): DiffSummary {
  const lines = diffLines(before, after);
  const added = lines.filter(l => l.op === '+').length;
  const removed = lines.filter(l => l.op === '-').length;
  const render = (l: DiffLine) => `${l.op}${l.text}`;
  if (lines.length <= 60) {
    return { diff: lines.map(render).join('\n'), added, removed };
  }
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((line, index) => {
    if (line.op !== ' ') {
      for (let k = Math.max(0, index - context); k <= Math.min(lines.length - 1, index + context); k++) {
        keep[k] = true;
      }
    }
  });
  const out: string[] = [];
  let oldLine = firstLine;
  let newLine = firstLine;
  let index = 0;
  while (index < lines.length) {
    if (!keep[index]) {
      if (lines[index].op !== '+') {
        oldLine++;
      }
      if (lines[index].op !== '-') {
        newLine++;
      }
      index++;
      continue;
    }
    let end = index;
    while (end < lines.length && keep[end]) {
      end++;
    }
    const hunk = lines.slice(index, end);
    const oldCount = hunk.filter(l => l.op !== '+').length;
    const newCount = hunk.filter(l => l.op !== '-').length;
    out.push(`@@ -${oldLine},${oldCount} +${newLine},${newCount} @@`, ...hunk.map(render));
    oldLine += oldCount;
    newLine += newCount;
    index = end;
  }
  return { diff: out.join('\n'), added, removed };
}

// -- the rewrite's state ------------------------------------------------------------------------------------------

export type RewriteContent = RewriteContentReceivedParams['content'];

export type RewritePhase = 'asking' | 'starting' | 'streaming' | 'done' | 'failed';

/** What the dialog shows: the text so far, and where the rewrite is. */
export class RewriteState {
  phase: RewritePhase = 'asking';
  text = '';
  error: string | null = null;
  model: string | null = null;
  reasoning = false;
  stopped = false;
  totalTimeMs: number | null = null;
  /** Bumped on every change (the dialog re-renders on it). */
  version = 0;

  /** The request went out. */
  start(): void {
    this.phase = 'starting';
    this.version++;
  }

  apply(content: RewriteContent): void {
    switch (content.type) {
      case 'started':
        if (this.phase === 'starting') {
          this.phase = 'streaming';
        }
        break;
      case 'reasoning':
        this.reasoning = true;
        this.phase = this.phase === 'starting' ? 'streaming' : this.phase;
        break;
      case 'text':
        this.reasoning = false;
        this.text += content.text;
        this.phase = this.phase === 'starting' ? 'streaming' : this.phase;
        break;
      case 'replace':
        this.text = content.text;
        break;
      case 'error':
        this.error = content.message;
        break;
      case 'finished':
        this.totalTimeMs = content.totalTimeMs;
        this.reasoning = false;
        this.phase = this.error && !this.text ? 'failed' : 'done';
        break;
    }
    this.version++;
  }

  /** The request itself failed (no rewrite started). */
  fail(message: string): void {
    this.error = message;
    this.phase = 'failed';
    this.version++;
  }

  get running(): boolean {
    return this.phase === 'starting' || this.phase === 'streaming';
  }

  /** What Accept writes: the rewritten text with the original's blank edges (see {@link keepEdges}). */
  result(original: string): string {
    return keepEdges(original, this.text);
  }

  /** Accept is offered once the rewrite is over and produced something different from the original. */
  canAccept(original: string): boolean {
    return this.phase === 'done' && this.text.trim() !== '' && this.result(original) !== original;
  }
}

/**
 * `text` with the line breaks (and blank lines) `original` starts and ends with. The server drops blank edge lines
 * from a rewrite, but a selection of whole lines ends with a line break: without it the next line would be joined
 * to the rewrite's last one (and a file would lose its final newline).
 */
export function keepEdges(original: string, text: string): string {
  const lead = /^(?:[ \t]*\n)+/.exec(original)?.[0] ?? '';
  const trail = /\n[ \t\n]*$/.exec(original)?.[0] ?? '';
  let out = text;
  if (lead) {
    out = lead + out.replace(/^(?:[ \t]*\n)+/, '');
  }
  if (trail) {
    out = out.replace(/\n[ \t\n]*$/, '') + trail;
  }
  return out;
}

/**
 * Where `original` (once at `[start, end)`) is in `source` now: the same place when it is unchanged, else its only
 * occurrence; null when it was edited or is ambiguous (the rewrite must not be applied blindly then).
 */
export function locateOriginal(
  source: string,
  original: string,
  start: number,
  end: number
): { start: number; end: number } | null {
  if (source.slice(start, end) === original) {
    return { start, end };
  }
  if (!original) {
    return null;
  }
  const first = source.indexOf(original);
  if (first < 0 || source.indexOf(original, first + 1) >= 0) {
    return null;
  }
  return { start: first, end: first + original.length };
}
