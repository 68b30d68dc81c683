/**
 * The notebook cell the panel attaches by itself: the one the user last ran or edited — not merely the selected one,
 * which moves to the empty cell below after Shift+Enter, so "my last cell raises an error" used to send that empty
 * cell (issue #30). It goes into the message with its error output (the traceback, without terminal colours), so
 * an error fix needs no tool to find the failing cell.
 *
 * Pure TypeScript: unit-tested under node in `test/cellFocus.test.ts`; `jupyterContext.ts` tracks the cell.
 */

import type { CellAttachment } from './completion';

/** A cell with its error output, when its last run raised. */
export interface FocusCell extends CellAttachment {
  /** The traceback as text (ANSI colours removed, the end kept when long). */
  error?: string;
}

/** How much of a traceback is sent: its end (the failing line and the error) when longer. */
export const ERROR_BUDGET = 2000;

// CSI sequences (colours, cursor moves) and OSC sequences, as IPython writes them into tracebacks
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** The text of a cell's error outputs (nbformat `error` outputs: `traceback`, else `ename: evalue`), or undefined. */
export function errorOutputText(outputs: readonly any[], budget = ERROR_BUDGET): string | undefined {
  const parts: string[] = [];
  for (const output of outputs) {
    if (output?.output_type !== 'error') {
      continue;
    }
    const traceback = Array.isArray(output.traceback) ? output.traceback.map(String).join('\n') : '';
    parts.push(stripAnsi(traceback).trim() || `${output.ename ?? 'Error'}: ${output.evalue ?? ''}`);
  }
  if (!parts.length) {
    return undefined;
  }
  let text = parts.join('\n\n');
  if (text.length > budget) {
    text = '…\n' + text.slice(text.length - budget + 2).replace(/^[^\n]*\n/, '');
  }
  return text;
}

/**
 * The cell as a `text` context (the reference's TextContext): it travels beside the user's words, not inside them, so
 * what the assistant does follows what the user typed — appended to the message, its file name and "cell" made the
 * embedded model's tool choice read "fix … 05-data-analysis.ipynb" as a request to read and edit the notebook, and it
 * called notebook_read three times instead of answering from the traceback in front of it (issue #30's walk).
 */
export function focusCellContext(cell: FocusCell): { type: 'text'; label: string; content: string } {
  const label = `cell ${cell.index + 1} of ${cell.path}` + (cell.error ? ' (its last run raised an error)' : '');
  return { type: 'text', label, content: focusCellBlock(cell).trim() };
}

/** The cell (numbered as JupyterLab numbers it, from 1) and its error, as the text of {@link focusCellContext}. */
export function focusCellBlock(cell: FocusCell): string {
  const fence = cell.source.includes('```') ? '~~~~' : '```';
  const lang = cell.cellType === 'markdown' ? 'markdown' : cell.language;
  const ran = cell.error ? ', which raised the error below' : '';
  let block = `\n\nThe cell I last ran or edited: cell ${cell.index + 1} (${cell.cellType}) of ${cell.path}${ran}:\n`;
  block += `${fence}${lang}\n${cell.source}\n${fence}`;
  if (cell.error) {
    const errorFence = cell.error.includes('```') ? '~~~~' : '```';
    block += `\nIts error output:\n${errorFence}\n${cell.error}\n${errorFence}`;
  }
  return block;
}
