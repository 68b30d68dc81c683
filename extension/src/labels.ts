/**
 * Short, readable labels for a narrow panel: model names in the picker, paths and cells in the `@` list. A label
 * is cut in the middle (the start says what it is, the end tells it apart: `qwen2.5-cod…q4_K_M`), never at its end
 * where names differ — the picker used to show "local/smollm:" and every `@` row of a notebook read
 * "05-data-analysis.ipynb · c…" (issue #30). The full text goes into a tooltip.
 *
 * Pure TypeScript: unit-tested under node in `test/labels.test.ts`.
 */

import type { CellAttachment } from './completion';

// Controls (newline included), DEL, C1, and the invisible characters that reorder or hide text: bidi embeddings,
// overrides and isolates, the marks, zero-width characters, line/paragraph separators, the BOM — as the engine
// writes them out in approval summaries (`visible` in eca_notebook/_text.py, same escapes).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `text` with invisible and control characters written out (`\u202e`, `\n`): a file named
 * `report\u202etxt.exe` in a repository someone else made shows as `reportexe.txt` in a row of the `@` list
 * otherwise, and a newline in a name would fake a second row.
 */
export function visible(text: string): string {
  return text.replace(INVISIBLE, ch => {
    const code = ch.charCodeAt(0);
    const hex = code < 0x100 ? '\\x' + code.toString(16).padStart(2, '0') : '\\u' + code.toString(16).padStart(4, '0');
    return NAMED[ch] ?? hex;
  });
}

/** `text` cut to at most `max` characters (code points) by an ellipsis in its middle. */
export function middleEllipsis(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max || max < 3) {
    return text;
  }
  const keep = max - 1;
  const head = Math.ceil(keep / 2);
  return chars.slice(0, head).join('') + '…' + chars.slice(chars.length - (keep - head)).join('');
}

/** What the model picker shows for a model id (`provider/name`): its name, cut in the middle, and the provider. */
export interface ModelLabel {
  /** The option's text: `smollm2-135m`, `gpt-4.1`. */
  label: string;
  /** The provider (the option group), '' when the id has none. */
  provider: string;
  /** The full id, for the tooltip. */
  title: string;
}

export const MODEL_LABEL_MAX = 22;

export function modelLabel(id: string, max = MODEL_LABEL_MAX): ModelLabel {
  const slash = id.indexOf('/');
  const provider = slash > 0 ? id.slice(0, slash) : '';
  const name = slash > 0 ? id.slice(slash + 1) : id;
  return { label: middleEllipsis(name || id, max), provider, title: id };
}

/** `path` relative to the Jupyter server's root when it is inside it (the `@` list's files), else as it is. */
export function relativePath(path: string, root: string | null | undefined): string {
  if (!root || !path.startsWith('/')) {
    return path;
  }
  const base = root.replace(/\/+$/, '');
  if (!base) {
    return path.replace(/^\/+/, '') || path;
  }
  return path.startsWith(base + '/') ? path.slice(base.length + 1) : path;
}

/** The first line of a cell with code on it, trimmed (what a user recognises a cell by). */
export function firstLine(source: string): string {
  return (
    source
      .split('\n')
      .map(line => line.trim())
      .find(line => line !== '') ?? ''
  );
}

/**
 * An `@` row for a notebook cell: the cell's number as JupyterLab shows it (from 1) and its first line as the label
 * — what tells the rows apart — and the notebook's path as the detail.
 */
export function cellRow(cell: CellAttachment, max = 48): { label: string; detail: string; title: string } {
  const line = firstLine(cell.source);
  const label = `cell ${cell.index + 1}` + (line ? ` · ${middleEllipsis(line, max)}` : '');
  return { label, detail: cell.path, title: `${cell.path} · cell ${cell.index + 1}\n${line}` };
}
