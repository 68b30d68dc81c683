/**
 * The parts of the engine's notebook requests that need no JupyterLab: which open notebook a server path names, and
 * applying `notebook/applyEdit` to a notebook's shared (Yjs) model so that the change is undoable the way a user's
 * edit is.
 *
 * Why it works on the shared model (`@jupyter/ydoc`'s YNotebook), not on the `.ipynb`: the open notebook *is* the
 * shared model — changing it there puts the edit on the undo stacks, leaves the document dirty like a user edit (no
 * "file changed on disk" dialog, nothing saved behind the user's back) and reaches collaborators. Kept free of
 * JupyterLab imports (the shared model comes in as the structural {@link SharedNotebookLike}) so
 * `test/notebookDoc.test.ts` runs it under node against a real YNotebook.
 *
 * Undo, as JupyterLab 4 does it (found in `@jupyter/ydoc` 4.x, `ycell.js` / `ydocument.js`): by default
 * (`documentWideUndoRedo: false`) every cell has its own `Y.UndoManager`, scoped to the cell and tracking only
 * transactions whose origin is that cell object; Ctrl+Z in a cell editor (`notebook:undo`) pops it. The notebook's
 * undo manager (command-mode `z`, `notebook:undo-cell-action`) is scoped to the cell list and tracks transactions
 * whose origin is the notebook. A Yjs transaction has one origin — the outermost `transact`'s — so a `setSource`
 * inside `sharedModel.transact(...)` lands on the notebook's stack and *not* on the cell's: Ctrl+Z in that cell would
 * not undo it. So the whole edit runs in one transaction with an origin of our own, which we add (for that
 * transaction only) to the tracked origins of every changed cell's undo manager, and of the notebook's when cells
 * are inserted, deleted or moved. Each undo manager records its own part of the one transaction: Ctrl+Z in
 * a changed cell restores that cell (source and metadata), `z` in command mode reverts the structural edit (with the
 * sources it changed) as one step. With `documentWideUndoRedo: true` the cells share the notebook's manager and the
 * whole edit is one step there.
 */

import type { NotebookCell, NotebookCellEdit } from './protocol';

type CellType = NotebookCell['cellType'];

/** The part of a `Y.UndoManager` used here. */
export interface UndoManagerLike {
  addTrackedOrigin(origin: unknown): void;
  removeTrackedOrigin(origin: unknown): void;
  /** The next change starts a new undo step (not merged into the user's typing of the last half second). */
  stopCapturing(): void;
}

/** The part of a shared cell (`@jupyter/ydoc` YCell) used here. */
export interface SharedCellLike {
  readonly cell_type: string;
  getId(): string;
  getSource(): string;
  updateSource(start: number, end: number, value?: string): void;
  setMetadata(key: string, value: any): void;
  deleteMetadata(key: string): void;
  toJSON(): Record<string, any>;
  readonly undoManager?: UndoManagerLike | null;
}

/** The part of a shared notebook (`@jupyter/ydoc` YNotebook) used here. */
export interface SharedNotebookLike {
  /** The cells as of the last finished transaction (Yjs updates this list when a transaction ends). */
  readonly cells: readonly SharedCellLike[];
  readonly undoManager?: UndoManagerLike | null;
  transact(f: () => void, undoable?: boolean, origin?: unknown): void;
  insertCell(index: number, cell: Record<string, any>): SharedCellLike;
  deleteCell(index: number): void;
}

// -- paths -----------------------------------------------------------------------------------------------------------

function normalize(path: string): string {
  let p = path.trim();
  if (p.startsWith('file://')) {
    p = decodeURIComponent(p.slice('file://'.length));
  }
  return p.replace(/\\/g, '/').replace(/\/{2,}/g, '/');
}

/**
 * A document path as JupyterLab's contents manager has it, without a drive prefix (`RTC:a.ipynb` under
 * jupyter-collaboration) or leading slash: relative to the server root.
 */
export function localPath(path: string): string {
  return normalize(path)
    .replace(/^[^/:]+:(?!\/)/, '')
    .replace(/^\//, '');
}

/**
 * How well the absolute `requested` path names the notebook JupyterLab knows as `panelPath` (relative to the server
 * root): `exact` when `serverRoot`/`panelPath` is it (or it is `panelPath` itself), `tail` when it merely ends with
 * `/panelPath` (no usable server root), or null.
 */
export function matchNotebookPath(requested: string, panelPath: string, serverRoot?: string | null): 'exact' | 'tail' | null {
  const want = normalize(requested);
  const local = localPath(panelPath);
  if (!local) {
    return null;
  }
  if (want === local) {
    return 'exact';
  }
  const root = serverRoot ? normalize(serverRoot).replace(/\/$/, '') : '';
  if (root && (root.startsWith('/') || /^[A-Za-z]:\//.test(root)) && want === `${root}/${local}`) {
    return 'exact';
  }
  return want.endsWith('/' + local) ? 'tail' : null;
}

/** The candidate the path names: an exact match first, else the longest tail match (the most specific). */
export function pickNotebook<T>(
  requested: string,
  candidates: Iterable<{ path: string; value: T }>,
  serverRoot?: string | null
): T | null {
  let best: { value: T; score: number } | null = null;
  for (const candidate of candidates) {
    const match = matchNotebookPath(requested, candidate.path, serverRoot);
    if (!match) {
      continue;
    }
    const score = match === 'exact' ? Number.MAX_SAFE_INTEGER : localPath(candidate.path).length;
    if (!best || score > best.score) {
      best = { value: candidate.value, score };
    }
  }
  return best ? best.value : null;
}

// -- edits -----------------------------------------------------------------------------------------------------------

export type EditOutcome = { applied: true } | { applied: false; error: string; cellIds: string[] };

interface Planned {
  id: string;
  source: string;
}

function named(edits: readonly NotebookCellEdit[]): string[] {
  const ids = new Set<string>();
  for (const edit of edits) {
    if (edit.cellId) {
      ids.add(edit.cellId);
    }
  }
  return [...ids];
}

function clamp(value: number | undefined, max: number): number {
  const n = Number.isFinite(value) ? Math.trunc(value as number) : max;
  return Math.max(0, Math.min(max, n));
}

/**
 * Where an `insert` goes among `order`: next to its anchor cell wherever that is now (`before` it unless it says
 * `after`, as the engine's own file edits do), so cells added above meanwhile do not shift it away; at `index`
 * (clamped) when the anchor is gone or there is none.
 */
function insertIndex<T>(edit: NotebookCellEdit, order: readonly T[], idOf: (cell: T) => string): number {
  if (edit.anchorCellId) {
    const anchor = order.findIndex(cell => idOf(cell) === edit.anchorCellId);
    if (anchor >= 0) {
      return edit.anchor === 'after' ? anchor + 1 : anchor;
    }
  }
  return clamp(edit.index, order.length);
}

/**
 * Check the whole edit list against the notebook as it is, simulating each edit in order (a later edit may name a
 * cell an earlier one inserted). Returns the first refusal, or null when every edit applies.
 */
export function checkEdits(cells: readonly SharedCellLike[], edits: readonly NotebookCellEdit[]): string | null {
  const order: Planned[] = cells.map(cell => ({ id: cell.getId(), source: cell.getSource() }));
  const find = (id: string | undefined) => (id ? order.findIndex(cell => cell.id === id) : -1);
  for (const [n, edit] of edits.entries()) {
    const where = `edit ${n + 1} (${edit.action})`;
    if (edit.action === 'insert') {
      if (edit.newCellId && find(edit.newCellId) >= 0) {
        return `${where}: cell id ${edit.newCellId} already exists`;
      }
      order.splice(insertIndex(edit, order, cell => cell.id), 0, {
        id: edit.newCellId ?? `(new ${n + 1})`,
        source: edit.source ?? ''
      });
      continue;
    }
    if (!['replace', 'delete', 'move'].includes(edit.action)) {
      return `${where}: unknown action`;
    }
    if (!edit.cellId) {
      return `${where}: no cellId`;
    }
    const index = find(edit.cellId);
    if (index < 0) {
      return `unknown cell id ${edit.cellId}`;
    }
    const cell = order[index];
    if (
      (edit.action === 'replace' || edit.action === 'delete') &&
      edit.expectedSource !== undefined &&
      edit.expectedSource !== null &&
      edit.expectedSource !== cell.source
    ) {
      return `cell ${edit.cellId} changed since the diff was made`;
    }
    if (edit.action === 'replace') {
      cell.source = edit.source ?? '';
    } else if (edit.action === 'delete') {
      order.splice(index, 1);
    } else {
      order.splice(index, 1);
      order.splice(clamp(edit.index, order.length), 0, cell);
    }
  }
  return null;
}

/**
 * The smallest splice turning `before` into `after`: the common prefix and suffix stay, so a collaborator's cursor
 * outside the change keeps its place and an undo restores only what changed. Never splits a surrogate pair.
 */
export function sourceSplice(before: string, after: string): { start: number; end: number; text: string } {
  let start = 0;
  const max = Math.min(before.length, after.length);
  while (start < max && before.charCodeAt(start) === after.charCodeAt(start)) {
    start++;
  }
  let tail = 0;
  while (
    tail < max - start &&
    before.charCodeAt(before.length - 1 - tail) === after.charCodeAt(after.length - 1 - tail)
  ) {
    tail++;
  }
  const isLow = (s: string, i: number) => i > 0 && i < s.length && (s.charCodeAt(i) & 0xfc00) === 0xdc00;
  if (isLow(before, start) || isLow(after, start)) {
    start--;
  }
  if (isLow(before, before.length - tail) || isLow(after, after.length - tail)) {
    tail--;
  }
  return { start, end: before.length - tail, text: after.slice(start, after.length - tail) };
}

/** Top-level keys replace the cell's; a null value removes the key (an undo sends that to drop provenance). */
function mergeMetadata(cell: SharedCellLike, metadata: Record<string, unknown> | undefined): void {
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (value === null) {
      cell.deleteMetadata(key);
    } else if (value !== undefined) {
      cell.setMetadata(key, value);
    }
  }
}

/** nbformat JSON for a new cell (only code cells carry outputs and an execution count). */
function newCellJson(
  id: string | undefined,
  cellType: CellType | string,
  source: string,
  metadata: Record<string, unknown> | undefined,
  outputs?: unknown[] | null,
  executionCount?: number | null
): Record<string, any> {
  const json: Record<string, any> = { cell_type: cellType, source, metadata: { ...(metadata ?? {}) } };
  if (id) {
    json.id = id;
  }
  if (cellType === 'code') {
    json.outputs = outputs ?? [];
    json.execution_count = executionCount ?? null;
  }
  return json;
}

/**
 * Apply `edits` to the notebook, all or nothing: every edit is checked first (an unknown cell, or a cell whose source
 * is no longer the `expectedSource` the user saw in the diff, refuses the whole list), then all of them run in one
 * transaction — one undo step, one update for collaborators. See the module comment for how undo is arranged.
 */
export function applyNotebookEdits(notebook: SharedNotebookLike, edits: readonly NotebookCellEdit[]): EditOutcome {
  const cells = notebook.cells;
  const error = checkEdits(cells, edits);
  if (error) {
    return { applied: false, error, cellIds: named(edits) };
  }
  // Inside the transaction `notebook.cells` is stale (Yjs refreshes it when the transaction ends), so the order and
  // the cell objects are tracked here, edit by edit, exactly as checkEdits simulated them.
  const order: SharedCellLike[] = [...cells];
  const indexOf = (id: string) => order.findIndex(cell => cell.getId() === id);

  const origin = { eca: 'notebook/applyEdit' };
  const managers = new Set<UndoManagerLike>();
  let structural = false;
  for (const edit of edits) {
    const cell = edit.cellId ? order.find(c => c.getId() === edit.cellId) : undefined;
    if (edit.action === 'replace' && cell) {
      if (cell.undoManager) {
        managers.add(cell.undoManager);
      }
    } else {
      structural = true;
    }
  }
  if (structural && notebook.undoManager) {
    managers.add(notebook.undoManager);
  }
  for (const manager of managers) {
    manager.stopCapturing();
    manager.addTrackedOrigin(origin);
  }
  try {
    notebook.transact(
      () => {
        for (const edit of edits) {
          applyOne(notebook, order, indexOf, edit);
        }
      },
      false, // `undoable` would make the notebook the origin; ours is tracked instead (above)
      origin
    );
  } finally {
    for (const manager of managers) {
      manager.removeTrackedOrigin(origin);
      manager.stopCapturing();
    }
  }
  return { applied: true };
}

function applyOne(
  notebook: SharedNotebookLike,
  order: SharedCellLike[],
  indexOf: (id: string) => number,
  edit: NotebookCellEdit
): void {
  switch (edit.action) {
    case 'insert': {
      const index = insertIndex(edit, order, cell => cell.getId());
      const json = newCellJson(
        edit.newCellId,
        edit.cellType ?? 'code',
        edit.source ?? '',
        edit.metadata,
        edit.outputs,
        edit.executionCount
      );
      if (edit.attachments && json.cell_type !== 'code') {
        json.attachments = edit.attachments; // restored by the undo of a delete
      }
      order.splice(index, 0, notebook.insertCell(index, json));
      return;
    }
    case 'replace': {
      const cell = order[indexOf(edit.cellId!)];
      const source = edit.source ?? '';
      const splice = sourceSplice(cell.getSource(), source);
      if (splice.start !== splice.end || splice.text) {
        cell.updateSource(splice.start, splice.end, splice.text);
      }
      mergeMetadata(cell, edit.metadata);
      return;
    }
    case 'delete': {
      const index = indexOf(edit.cellId!);
      notebook.deleteCell(index);
      order.splice(index, 1);
      return;
    }
    case 'move': {
      // What YNotebook.moveCell does (a copy inserted, the original deleted), with the indices tracked here: moveCell
      // reads `notebook.cells`, which is stale after an earlier insert or delete in this transaction.
      const from = indexOf(edit.cellId!);
      const json = order[from].toJSON();
      notebook.deleteCell(from);
      order.splice(from, 1);
      const to = clamp(edit.index, order.length);
      order.splice(to, 0, notebook.insertCell(to, json));
      return;
    }
  }
}
