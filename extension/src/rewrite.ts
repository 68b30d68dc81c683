/**
 * "Rewrite with ECA…": rewrite the selection — or the whole cell / file when nothing is selected — as the user
 * describes, via `rewrite/prompt`; the rewrite streams in (`rewrite/contentReceived`) as a diff, Stop ends it
 * (`rewrite/stop`), Accept replaces the original in the editor as one undoable change, Reject leaves it alone.
 *
 * Reached from the notebook cell context menu, the file editor context menu, the command palette and Accel+K
 * (Ctrl+K / Cmd+K) in a notebook or file editor — Ctrl+Shift+E, the first idea, is JupyterLab's debugger panel.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import type { CodeEditor } from '@jupyterlab/codeeditor';
import { IEditorTracker } from '@jupyterlab/fileeditor';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ReactWidget } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import type { EcaClient } from './client';
import { positionAt } from './inlineCore';
import type { RewritePromptParams } from './protocol';
import { RewriteState, locateOriginal } from './rewriteCore';
import { IEcaChat } from './tokens';
import { RewriteDialog } from './widgets/RewriteDialog';

export const REWRITE_COMMAND = 'eca:rewrite';
export const REWRITE_KEYS = ['Accel K'];

/** What a rewrite works on: a range of one editor's text. */
export interface RewriteTarget {
  editor: CodeEditor.IEditor;
  /** JS offsets of the original in the editor's text when the rewrite started. */
  start: number;
  end: number;
  original: string;
  /** The path sent to the server (a notebook cell's is `<notebook>#cell-<n>`: not a file it should read). */
  path: string;
  /** For the dialog: "Selection in analysis.ipynb · cell 3". */
  label: string;
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** The selection of the active notebook cell or file editor — or all of it when nothing is selected. */
export function currentTarget(
  app: JupyterFrontEnd,
  notebooks: INotebookTracker | null,
  editors: IEditorTracker | null
): RewriteTarget | null {
  const widget = app.shell.currentWidget;
  let editor: CodeEditor.IEditor | null | undefined = null;
  let path = '';
  let where = '';
  let useSelection = true;
  const panel = widget && notebooks?.has(widget) && widget instanceof NotebookPanel ? widget : null;
  if (panel) {
    const cell = panel.content.activeCell;
    editor = cell?.editor;
    const index = panel.content.activeCellIndex;
    path = `${panel.context.path}#cell-${index + 1}`;
    where = `${basename(panel.context.path)} · cell ${index + 1}`;
    // In command mode the editor's last selection is not what the user is looking at: take the whole cell.
    useSelection = panel.content.mode === 'edit';
  } else {
    const doc = widget ? editors?.find(candidate => candidate === widget) : undefined;
    if (doc) {
      editor = doc.content.editor;
      path = doc.context.path;
      where = basename(path);
    }
  }
  if (!editor) {
    return null;
  }
  const source = editor.model.sharedModel.getSource();
  let start = 0;
  let end = source.length;
  if (useSelection) {
    const selection = editor.getSelection();
    const a = editor.getOffsetAt(selection.start);
    const b = editor.getOffsetAt(selection.end);
    if (a !== b) {
      start = Math.min(a, b);
      end = Math.max(a, b);
    }
  }
  const whole = start === 0 && end === source.length;
  const label = whole ? (panel ? `Cell: ${where}` : `File: ${where}`) : `Selection in ${where}`;
  return { editor, start, end, original: source.slice(start, end), path, label };
}

function newId(): string {
  const c: any = (globalThis as any).crypto;
  if (c && typeof c.randomUUID === 'function') {
    return c.randomUUID();
  }
  return 'rewrite-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 10);
}

/** The dialog as a widget over the page (attached to the body), with the rewrite's whole life cycle. */
export class RewriteOverlay extends ReactWidget {
  readonly state = new RewriteState();
  readonly rewriteId = newId();
  private _prompt = '';
  private _applyError: string | null = null;
  private _closed = false;

  constructor(
    private readonly _client: EcaClient,
    readonly target: RewriteTarget
  ) {
    super();
    this.addClass('eca-RewriteOverlay');
  }

  /** Send `rewrite/prompt`; the contents re-render the dialog as they arrive. */
  async submit(prompt: string): Promise<void> {
    if (this.state.phase !== 'asking') {
      return;
    }
    this._prompt = prompt;
    this.state.start();
    this.update();
    const source = this.target.editor.model.sharedModel.getSource();
    const params: RewritePromptParams = {
      id: this.rewriteId,
      text: this.target.original,
      prompt,
      path: this.target.path,
      range: { start: positionAt(source, this.target.start), end: positionAt(source, this.target.end) }
    };
    try {
      const result = await this._client.rewrite(params, content => {
        this.state.apply(content);
        this.update();
      });
      if (result?.model) {
        this.state.model = result.model;
        this.state.version++;
        this.update();
      }
    } catch (error) {
      this.state.fail(error instanceof Error ? error.message : String(error));
      this.update();
    }
  }

  stop(): void {
    if (this.state.running) {
      this.state.stopped = true;
      void this._client.stopRewrite(this.rewriteId).catch(() => undefined);
    }
  }

  /** Replace the original with the rewrite, as one change (one undo step); refuse if the original was edited. */
  accept(): void {
    if (!this.state.canAccept(this.target.original)) {
      return;
    }
    const { editor, start, end, original } = this.target;
    const shared = editor.model.sharedModel;
    const at = locateOriginal(shared.getSource(), original, start, end);
    if (!at) {
      this._applyError = 'The original text changed meanwhile: the rewrite was not applied.';
      this.update();
      return;
    }
    const text = this.state.result(original);
    shared.updateSource(at.start, at.end, text);
    editor.setSelection({ start: editor.getPositionAt(at.start)!, end: editor.getPositionAt(at.start + text.length)! });
    this._finish();
    editor.focus();
  }

  reject(): void {
    this.stop();
    this._finish();
    this.target.editor.focus();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    if (!this._closed) {
      this._closed = true;
      this.stop();
    }
    super.dispose();
  }

  private _finish(): void {
    this._closed = true;
    this.dispose();
  }

  protected render(): JSX.Element {
    const source = this.target.editor.model.sharedModel.getSource();
    const first = positionAt(source, this.target.start).line;
    const last = positionAt(source, this.target.end).line;
    return React.createElement(RewriteDialog, {
      title: this.target.label,
      original: this.target.original,
      firstLine: first,
      where: first === last ? `line ${first}` : `lines ${first}–${last}`,
      state: this.state,
      prompt: this._prompt,
      applyError: this._applyError,
      onSubmit: prompt => void this.submit(prompt),
      onStop: () => this.stop(),
      onAccept: () => this.accept(),
      onReject: () => this.reject()
    });
  }
}

export const rewritePlugin: JupyterFrontEndPlugin<void> = {
  id: 'eca-notebook:rewrite',
  description: '"Rewrite with ECA…": rewrite a selection or a cell as described, shown as a diff to accept.',
  autoStart: true,
  requires: [IEcaChat],
  optional: [INotebookTracker, IEditorTracker, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    chat: IEcaChat,
    notebooks: INotebookTracker | null,
    editors: IEditorTracker | null,
    palette: ICommandPalette | null
  ): void => {
    let open: RewriteOverlay | null = null;
    app.commands.addCommand(REWRITE_COMMAND, {
      label: 'Rewrite with ECA…',
      caption: 'Rewrite the selection (or the whole cell) as you describe; review the diff, then accept or reject',
      isEnabled: () => currentTarget(app, notebooks, editors) !== null,
      execute: () => {
        if (open && !open.isDisposed) {
          open.node.querySelector<HTMLElement>('input, .eca-rewrite-accept, .eca-rewrite-stop')?.focus();
          return;
        }
        const target = currentTarget(app, notebooks, editors);
        if (!target) {
          return;
        }
        open = new RewriteOverlay(chat.client, target);
        Widget.attach(open, document.body);
        open.update();
      }
    });
    app.contextMenu.addItem({ command: REWRITE_COMMAND, selector: '.jp-Notebook .jp-Cell', rank: 0 });
    app.contextMenu.addItem({ command: REWRITE_COMMAND, selector: '.jp-FileEditor', rank: 0 });
    for (const selector of ['.jp-Notebook', '.jp-FileEditor']) {
      app.commands.addKeyBinding({ command: REWRITE_COMMAND, keys: REWRITE_KEYS, selector });
    }
    palette?.addItem({ command: REWRITE_COMMAND, category: 'ECA' });
  }
};
