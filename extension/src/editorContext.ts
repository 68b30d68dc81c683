/**
 * What the panel knows about the user's editors, behind a small interface so the widgets don't depend on the
 * notebook or file-editor packages: the active notebook/editor as a context (sent with each prompt while the
 * "auto context" chip is on), and the open notebooks' cells for `@` completion.
 */

import type { ChatContext } from './protocol';
import type { FocusCell } from './cellFocus';
import type { CellAttachment } from './completion';

export interface ActiveContext {
  label: string;
  context: ChatContext;
  /** In a notebook: the cell last run or edited (else the selected one), with its error — sent inside the message. */
  cell?: FocusCell;
}

export interface EditorContextSource {
  /** The active document as a `cursor` (file editor) or `file` (notebook) context, if any. */
  active(): ActiveContext | null;
  /** Cells of open notebooks whose source or notebook name matches `query` (case-insensitive). */
  cells(query: string, limit?: number): CellAttachment[];
  /** A path from the server (absolute) as the file browser shows it: relative to the Jupyter root when inside. */
  relative?(path: string): string;
  /** Called when the active document or its cursor changes. */
  subscribe(listener: () => void): () => void;
}

export const noEditorContext: EditorContextSource = {
  active: () => null,
  cells: () => [],
  subscribe: () => () => undefined
};
