/**
 * The editor side of the panel inside JupyterLab: the active notebook or file editor as a prompt context, the
 * open notebooks' cells for `@` completion, and `editor/getDiagnostics` answered from the notebooks' error outputs
 * (the last run of a cell that raised) — the diagnostics a notebook user actually has.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import type { IEditorTracker } from '@jupyterlab/fileeditor';
import type { ICellModel } from '@jupyterlab/cells';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

import type { CellAttachment } from './completion';
import type { ActiveContext, EditorContextSource } from './editorContext';
import { FocusCell, errorOutputText } from './cellFocus';
import { firstLine, middleEllipsis, relativePath } from './labels';
import type { EditorDiagnostic } from './protocol';

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function notebookLanguage(panel: NotebookPanel): string {
  const info = (panel.content.model?.metadata as any)?.language_info;
  return String(info?.name ?? panel.sessionContext.kernelDisplayName ?? 'python')
    .toLowerCase()
    .split(' ')[0];
}

export class JupyterEditorContext implements EditorContextSource {
  private readonly _listeners = new Set<() => void>();
  private readonly _focus = new WeakMap<NotebookPanel, ICellModel>();

  constructor(
    private readonly _app: JupyterFrontEnd,
    private readonly _notebooks: INotebookTracker | null,
    private readonly _editors: IEditorTracker | null
  ) {
    const emit = () => {
      for (const listener of [...this._listeners]) {
        listener();
      }
    };
    const shell: any = this._app.shell;
    shell.currentChanged?.connect?.(emit);
    this._notebooks?.currentChanged.connect(emit);
    this._notebooks?.activeCellChanged.connect(emit);
    this._editors?.currentChanged.connect(emit);
    // The cell the user last ran or edited, per notebook: Shift+Enter selects the cell below, which must not become
    // the attached one ("my last cell raises an error" meant the one that ran).
    NotebookActions.executed.connect((_, { notebook, cell }) => {
      const panel = notebook.parent;
      if (panel instanceof NotebookPanel && this._notebooks?.has(panel)) {
        this._focus.set(panel, cell.model);
        emit();
      }
    });
    let unwatch: (() => void) | null = null;
    const watchActive = () => {
      unwatch?.();
      unwatch = null;
      const panel = this._notebooks?.currentWidget;
      const model = this._notebooks?.activeCell?.model;
      if (!panel || !model) {
        return;
      }
      const onChange = (_: unknown, change: { sourceChange?: unknown }) => {
        if (change.sourceChange && this._focus.get(panel) !== model) {
          this._focus.set(panel, model);
          emit();
        }
      };
      model.sharedModel.changed.connect(onChange);
      unwatch = () => model.sharedModel.changed.disconnect(onChange);
    };
    this._notebooks?.activeCellChanged.connect(watchActive);
    this._notebooks?.currentChanged.connect(watchActive);
    watchActive();
  }

  /** The cell last run or edited in `panel` while it is still there, else its active cell (and their index). */
  private _focusCell(panel: NotebookPanel): { model: ICellModel; index: number } | null {
    const cells = panel.content.widgets;
    const focused = this._focus.get(panel);
    const index = focused ? cells.findIndex(cell => cell.model === focused) : -1;
    if (index >= 0) {
      return { model: cells[index].model, index };
    }
    const active = panel.content.activeCellIndex;
    return active >= 0 && cells[active] ? { model: cells[active].model, index: active } : null;
  }

  relative(path: string): string {
    return relativePath(path, PageConfig.getOption('serverRoot') || null);
  }

  subscribe(listener: () => void): () => void {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  active(): ActiveContext | null {
    const widget = this._app.shell.currentWidget;
    if (!widget) {
      return null;
    }
    const notebook = this._notebooks?.find(panel => panel === widget);
    if (notebook) {
      const path = notebook.context.path;
      const focus = this._focusCell(notebook);
      if (!focus) {
        return { label: basename(path), context: { type: 'file', path } };
      }
      const source = focus.model.sharedModel.getSource();
      const outputs: any = (focus.model as any).outputs;
      const error = outputs?.toJSON ? errorOutputText(outputs.toJSON()) : undefined;
      const line = firstLine(source);
      const cell: FocusCell = {
        path,
        index: focus.index,
        cellType: focus.model.type,
        language: notebookLanguage(notebook),
        source,
        ...(error ? { error } : {})
      };
      return {
        // the notebook, the cell's number as JupyterLab shows it and its first line; ⚠ when its last run raised
        label:
          `${basename(path)} · cell ${focus.index + 1}` +
          (line ? `: ${middleEllipsis(line, 28)}` : '') +
          (error ? ' ⚠' : ''),
        context: { type: 'file', path },
        ...(source.trim() || error ? { cell } : {})
      };
    }
    const editor = this._editors?.find(doc => doc === widget);
    if (editor) {
      const path = editor.context.path;
      const selection = editor.content.editor.getSelection();
      // CodeMirror positions are 0-based; ECA cursor lines are 1-based, characters 0-based.
      const start = { line: selection.start.line + 1, character: selection.start.column };
      const end = { line: selection.end.line + 1, character: selection.end.column };
      const where = start.line === end.line ? `${start.line}` : `${start.line}-${end.line}`;
      return {
        label: `${basename(path)}:${where}`,
        context: { type: 'cursor', path, position: { start, end } }
      };
    }
    return null;
  }

  cells(query: string, limit = 8): CellAttachment[] {
    if (!this._notebooks) {
      return [];
    }
    const q = query.trim().toLowerCase();
    const found: CellAttachment[] = [];
    const current = this._notebooks.currentWidget;
    const panels: NotebookPanel[] = [];
    if (current) {
      panels.push(current);
    }
    this._notebooks.forEach(panel => {
      if (panel !== current) {
        panels.push(panel);
      }
    });
    for (const panel of panels) {
      const path = panel.context.path;
      const language = notebookLanguage(panel);
      const name = basename(path).toLowerCase();
      panel.content.widgets.forEach((cell, index) => {
        if (found.length >= limit) {
          return;
        }
        const source = cell.model.sharedModel.getSource();
        if (!source.trim()) {
          return;
        }
        const label = `${name} cell ${index + 1}`;
        if (!q || source.toLowerCase().includes(q) || label.includes(q)) {
          found.push({ path, index, cellType: cell.model.type, language, source });
        }
      });
    }
    return found;
  }

  /** Error outputs of the open notebooks' cells, as ECA diagnostics (filtered by `uri` when given). */
  diagnostics(uri?: string): EditorDiagnostic[] {
    const result: EditorDiagnostic[] = [];
    const wanted = uri ? decodeURIComponent(uri.replace(/^file:\/\//, '')) : null;
    this._notebooks?.forEach(panel => {
      const path = panel.context.path;
      if (wanted && !(wanted === path || wanted.endsWith('/' + path))) {
        return;
      }
      panel.content.widgets.forEach((cell, index) => {
        const outputs: any = (cell.model as any).outputs;
        if (!outputs || typeof outputs.length !== 'number') {
          return;
        }
        for (let i = 0; i < outputs.length; i++) {
          const output = outputs.get(i)?.toJSON?.() as any;
          if (output?.output_type === 'error') {
            result.push({
              uri: path,
              severity: 'error',
              source: 'jupyter-kernel',
              range: { start: { line: 1, character: 0 }, end: { line: 1, character: 0 } },
              code: String(output.ename ?? 'Error'),
              message: `cell ${index + 1}: ${output.ename}: ${output.evalue}`
            } as EditorDiagnostic);
          }
        }
      });
    });
    return result;
  }
}
