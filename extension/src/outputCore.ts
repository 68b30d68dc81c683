/**
 * The pure side of "one click from what you see": a notebook output as something to attach (its text, or the
 * image it shows as an `image` context), the "Fix with ECA" and "Explain" prompts, and the composer's inbox that
 * "Add to chat" drops attachments into. No JupyterLab imports (unit-tested under node in `test/outputCore.test.ts`).
 */

import type { ImageContext } from './protocol';

/** An output's text attached to a prompt: sent inline after the message, as attached cells are. */
export interface OutputAttachment {
  /** "analysis.ipynb · cell 3 · output". */
  label: string;
  /** The notebook's path (relative to the Jupyter root). */
  path: string;
  /** 0-based cell index. */
  index: number;
  text: string;
}

/** What an output gives the chat: text, an image, or both (a plot with its `<Figure …>` text). */
export interface OutputParts {
  text: OutputAttachment | null;
  image: ImageContext | null;
}

/** The longest output text sent (the start and the end are kept: a traceback's end says what failed). */
export const MAX_OUTPUT_CHARS = 12_000;
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Terminal colour and cursor sequences removed (tracebacks are coloured). */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '').replace(/\u001b\][^\u0007\u001b]*(\u0007|\u001b\\)/g, '');
}

function joined(value: unknown): string {
  if (Array.isArray(value)) {
    return value.map(String).join('');
  }
  return typeof value === 'string' ? value : '';
}

/** At most `limit` characters: the start and the end, with the middle left out said so. */
export function capText(text: string, limit = MAX_OUTPUT_CHARS): string {
  if (text.length <= limit) {
    return text;
  }
  const head = Math.floor(limit * 0.4);
  const tail = limit - head;
  return `${text.slice(0, head)}\n… [${text.length - limit} characters left out] …\n${text.slice(text.length - tail)}`;
}

/** The text an nbformat output shows (a traceback without colours; a rich output's text/plain). */
export function outputText(output: any): string {
  if (!output || typeof output !== 'object') {
    return '';
  }
  switch (output.output_type) {
    case 'stream':
      return stripAnsi(joined(output.text));
    case 'error': {
      const traceback = Array.isArray(output.traceback) ? output.traceback.map(String).join('\n') : '';
      return stripAnsi(traceback || `${output.ename}: ${output.evalue}`);
    }
    case 'execute_result':
    case 'display_data': {
      const data = output.data ?? {};
      return stripAnsi(joined(data['text/plain']) || joined(data['text/markdown']));
    }
    default:
      return '';
  }
}

/** What "Add to chat" / "Explain" attach for the output at `outputIndex` of cell `index` of the notebook `path`. */
export function outputParts(output: any, path: string, index: number): OutputParts {
  const label = `${basename(path)} · cell ${index + 1} · output`;
  const data = output?.data ?? {};
  let image: ImageContext | null = null;
  for (const mediaType of IMAGE_TYPES) {
    const value = joined(data[mediaType]).replace(/\s+/g, '');
    if (value) {
      image = { type: 'image', mediaType, base64: value, name: `${basename(path)} cell ${index + 1}` };
      break;
    }
  }
  const text = outputText(output).trim();
  // a plot's text/plain is "<Figure size 640x480 with 1 Axes>": the image says it all
  const useful = text && !(image && /^<[^>]*>$/.test(text));
  return { text: useful ? { label, path, index, text: capText(text) } : null, image };
}

/** The message after the user's words: each attached output as a fenced block naming its notebook and cell. */
export function composeOutputs(message: string, outputs: OutputAttachment[]): string {
  let result = message;
  for (const output of outputs) {
    const fence = output.text.includes('```') ? '~~~~' : '```';
    result += `\n\nOutput of cell ${output.index + 1} of ${output.path}:\n${fence}\n${output.text}\n${fence}`;
  }
  return result;
}

/** The cell and error a "Fix with ECA" click sends. */
export interface ErrorTarget {
  path: string;
  index: number;
  source: string;
  ename: string;
  evalue: string;
  traceback: string;
  /** The cell's id, so the model edits exactly it (`notebook_edit_cell`). */
  cellId?: string;
}

/** The fix prompt: what failed, the cell, the traceback — the model answers with a per-cell edit to approve. */
export function fixPrompt(target: ErrorTarget): string {
  const where = `cell ${target.index + 1}${target.cellId ? ` (id ${target.cellId})` : ''} of ${target.path}`;
  const source = target.source.includes('```') ? `~~~~python\n${target.source}\n~~~~` : '```python\n' + target.source + '\n```';
  const traceback = capText(stripAnsi(target.traceback).trim() || `${target.ename}: ${target.evalue}`);
  return (
    `Fix the error in ${where}: ${target.ename}: ${target.evalue}\n` +
    'Change the cell with the notebook tools so it runs; say briefly what was wrong.\n\n' +
    `The cell:\n${source}\n\nThe traceback:\n\`\`\`\n${traceback}\n\`\`\``
  );
}

/** The "Explain" prompt for an attached output. */
export function explainPrompt(path: string, index: number, isError: boolean): string {
  return isError
    ? `Explain this error from cell ${index + 1} of ${path}: what went wrong and why.`
    : `Explain this output of cell ${index + 1} of ${path}: what does it show?`;
}

/** Something "Add to chat" hands the composer. */
export type InboxItem = { kind: 'output'; output: OutputAttachment } | { kind: 'image'; image: ImageContext };

/** The composer's inbox: "Add to chat" (outside React) puts attachments here; the composer takes them. */
export class ComposerInbox {
  private readonly _listeners = new Set<(items: InboxItem[]) => void>();
  private _pending: InboxItem[] = [];

  /** Hand items to the composer (kept until one is listening). */
  put(items: InboxItem[]): void {
    if (items.length === 0) {
      return;
    }
    if (this._listeners.size === 0) {
      this._pending.push(...items);
      return;
    }
    for (const listener of [...this._listeners]) {
      listener(items);
    }
  }

  subscribe(listener: (items: InboxItem[]) => void): () => void {
    this._listeners.add(listener);
    if (this._pending.length) {
      const pending = this._pending;
      this._pending = [];
      listener(pending);
    }
    return () => this._listeners.delete(listener);
  }
}

export const composerInbox = new ComposerInbox();
