/**
 * The engine's notebook requests, answered from the notebooks open in this JupyterLab tab: `notebook/getCells`
 * (the cells as the user sees them, unsaved edits and outputs included), `notebook/applyEdit` (a change made in the
 * document model — on the undo stack, no "file changed on disk" dialog, seen by collaborators; see
 * `notebookDoc.ts`) and `notebook/runCells` (in the notebook's own kernel, outputs appearing in the cells as if the
 * user ran them). A notebook that is not open here is answered `open: false`; the engine then works on the file.
 */

import type { ISessionContext } from '@jupyterlab/apputils';
import { CodeCell } from '@jupyterlab/cells';
import type { Cell, ICellModel, ICodeCellModel, MarkdownCell } from '@jupyterlab/cells';
import { PageConfig } from '@jupyterlab/coreutils';
import type { INotebookTracker, Notebook, NotebookPanel } from '@jupyterlab/notebook';
import type { KernelMessage } from '@jupyterlab/services';

import type { NotebookProvider } from './client';
import { SharedNotebookLike, applyNotebookEdits, pickNotebook } from './notebookDoc';
import type {
  NotebookApplyEditParams,
  NotebookApplyEditResult,
  NotebookCell,
  NotebookCellRun,
  NotebookGetCellsParams,
  NotebookGetCellsResult,
  NotebookRunCellsParams,
  NotebookRunCellsResult
} from './protocol';

/** How long a notebook that is still loading may take before it is treated as not open. */
const LOAD_WAIT_MS = 10000;
/** After an interrupt, how long to wait for the cell to finish (its KeyboardInterrupt traceback) before answering. */
const INTERRUPT_GRACE_MS = 5000;

type RunStatus = NotebookCellRun['status'];
type Settled = { kind: 'reply'; reply: KernelMessage.IExecuteReplyMsg | void } | { kind: 'failed' };

/** Resolves after `ms` (never when `ms` is infinite); `cancel` clears the timer. */
function delay<T>(ms: number, value: T): { promise: Promise<T>; cancel: () => void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<T>(resolve => {
    if (Number.isFinite(ms)) {
      timer = setTimeout(() => resolve(value), Math.max(0, ms));
    }
  });
  return { promise, cancel: () => timer !== undefined && clearTimeout(timer) };
}

/** Resolves when `signal` aborts (never without one); `cancel` removes the listener. */
function aborted<T>(signal: AbortSignal | undefined, value: T): { promise: Promise<T>; cancel: () => void } {
  let listener: (() => void) | undefined;
  const promise = new Promise<T>(resolve => {
    if (signal?.aborted) {
      resolve(value);
    } else if (signal) {
      listener = () => resolve(value);
      signal.addEventListener('abort', listener, { once: true });
    }
  });
  return { promise, cancel: () => listener && signal?.removeEventListener('abort', listener) };
}

/** One cell as the protocol describes it, read from JupyterLab's cell model (outputs as nbformat JSON). */
export function describeCell(model: ICellModel, index: number): NotebookCell {
  const cell: NotebookCell = {
    id: model.id,
    index,
    cellType: model.type as NotebookCell['cellType'],
    source: model.sharedModel.getSource(),
    metadata: model.sharedModel.getMetadata() as { [key: string]: unknown }
  };
  if (model.type === 'code') {
    const code = model as ICodeCellModel;
    if (typeof code.executionCount === 'number') {
      cell.executionCount = code.executionCount;
    }
    cell.outputs = code.outputs.toJSON() as unknown as NotebookCell['outputs'];
  } else {
    const attachments = (model.sharedModel as any).getAttachments?.();
    if (attachments && Object.keys(attachments).length > 0) {
      cell.attachments = attachments;
    }
  }
  return cell;
}

export class JupyterNotebookAccess implements NotebookProvider {
  constructor(private readonly _tracker: INotebookTracker) {}

  /** The open notebook an absolute server path names (see `notebookDoc.pickNotebook`), or null. */
  find(path: string): NotebookPanel | null {
    const candidates: { path: string; value: NotebookPanel }[] = [];
    this._tracker.forEach(panel => {
      if (!panel.isDisposed) {
        candidates.push({ path: panel.context.path, value: panel });
      }
    });
    return pickNotebook(path, candidates, PageConfig.getOption('serverRoot') || null);
  }

  async getCells(params: NotebookGetCellsParams): Promise<NotebookGetCellsResult> {
    const panel = await this._loaded(params.path);
    if (!panel) {
      return { open: false, cells: [] };
    }
    return { open: true, cells: this._cells(panel.content) };
  }

  async applyEdit(params: NotebookApplyEditParams): Promise<NotebookApplyEditResult> {
    const panel = await this._loaded(params.path);
    const model = panel?.content.model;
    if (!panel || !model) {
      return { open: false, applied: false };
    }
    if (panel.context.model.readOnly) {
      return { open: true, applied: false, error: 'the notebook is read-only in JupyterLab' };
    }
    // Not saved: the notebook is left dirty, as after an edit by the user, who saves (or undoes) it.
    const outcome = applyNotebookEdits(model.sharedModel as unknown as SharedNotebookLike, params.edits ?? []);
    if (outcome.applied) {
      return { open: true, applied: true };
    }
    const named = new Set(outcome.cellIds);
    return {
      open: true,
      applied: false,
      error: outcome.error,
      cells: this._cells(panel.content).filter(cell => named.has(cell.id))
    };
  }

  /**
   * Run the cells in order in the notebook's kernel, stopping at the first that fails. `timeoutMs` bounds the whole
   * run (the engine's request waits that long plus a grace): when it passes, or when the server cancels the request,
   * the kernel is interrupted and the answer says how far it got.
   */
  async runCells(params: NotebookRunCellsParams, signal?: AbortSignal): Promise<NotebookRunCellsResult> {
    const deadline = params.timeoutMs && params.timeoutMs > 0 ? Date.now() + params.timeoutMs : Infinity;
    const panel = await this._loaded(params.path);
    if (!panel) {
      return { open: false, runs: [] };
    }
    const notebook = panel.content;
    const targets: Cell[] = [];
    for (const id of params.cellIds ?? []) {
      const cell = notebook.widgets.find(widget => widget.model.id === id);
      if (!cell) {
        return { open: true, runs: [], error: `unknown cell id ${id}` };
      }
      targets.push(cell);
    }
    const session = panel.sessionContext;
    if (targets.some(cell => cell.model.type === 'code' && cell.model.sharedModel.getSource().trim())) {
      if (!session.isReady) {
        const wait = delay(deadline - Date.now(), undefined);
        const stop = aborted(signal, undefined);
        await Promise.race([session.ready.catch(() => undefined), wait.promise, stop.promise]);
        wait.cancel();
        stop.cancel();
      }
      if (!session.session?.kernel) {
        return { open: true, runs: [], error: 'the notebook has no kernel: start or select one in JupyterLab' };
      }
    }
    const runs: NotebookCellRun[] = [];
    let stopped = false;
    for (const cell of targets) {
      const id = cell.model.id;
      if (stopped || signal?.aborted) {
        runs.push({ id, index: notebook.widgets.indexOf(cell), status: 'not-run', outputs: [] });
        continue;
      }
      const status = await this._runOne(notebook, cell, session, deadline, signal);
      const { executionCount, outputs } = describeCell(cell.model, 0);
      runs.push({ id, index: notebook.widgets.indexOf(cell), status, executionCount, outputs: outputs ?? [] });
      stopped = status !== 'ok';
    }
    const result: NotebookRunCellsResult = { open: true, runs };
    if (signal?.aborted) {
      result.error = 'cancelled: the kernel was interrupted';
    }
    return result;
  }

  private async _runOne(
    notebook: Notebook,
    cell: Cell,
    session: ISessionContext,
    deadline: number,
    signal: AbortSignal | undefined
  ): Promise<RunStatus> {
    if (cell.model.type === 'markdown') {
      (cell as MarkdownCell).rendered = true;
      return 'ok';
    }
    if (cell.model.type !== 'code') {
      return 'ok'; // a raw cell has nothing to run
    }
    const settled: Promise<Settled> = CodeCell.execute(cell as CodeCell, session, {
      recordTiming: notebook.notebookConfig.recordTiming
    }).then(
      reply => ({ kind: 'reply', reply }),
      () => ({ kind: 'failed' })
    );
    const timeout = delay(deadline - Date.now(), 'timeout' as const);
    const cancel = aborted(signal, 'cancelled' as const);
    const first = await Promise.race([settled, timeout.promise, cancel.promise]);
    timeout.cancel();
    cancel.cancel();
    if (first === 'timeout' || first === 'cancelled') {
      await session.session?.kernel?.interrupt().catch(() => undefined);
      const grace = delay(INTERRUPT_GRACE_MS, null);
      const after = await Promise.race([settled, grace.promise]);
      grace.cancel();
      if (first === 'timeout') {
        return 'timeout';
      }
      return after ? this._status(cell, after) : 'error';
    }
    return this._status(cell, first);
  }

  private _status(cell: Cell, settled: Settled): RunStatus {
    if (settled.kind === 'failed') {
      return 'error'; // the kernel died or restarted, or the execution was cancelled
    }
    if (settled.reply && settled.reply.content.status !== 'ok') {
      return 'error'; // an exception, or aborted after an earlier error in the kernel's queue
    }
    const outputs = describeCell(cell.model, 0).outputs ?? [];
    return outputs.some(output => output.output_type === 'error') ? 'error' : 'ok';
  }

  private _cells(notebook: Notebook): NotebookCell[] {
    const cells: NotebookCell[] = [];
    const list = notebook.model?.cells;
    if (list) {
      for (let index = 0; index < list.length; index++) {
        cells.push(describeCell(list.get(index), index));
      }
    }
    return cells;
  }

  /** The open notebook, once its content has loaded (a notebook still opening is waited for a while). */
  private async _loaded(path: string): Promise<NotebookPanel | null> {
    const panel = this.find(path);
    if (!panel) {
      return null;
    }
    if (!panel.context.isReady) {
      const wait = delay(LOAD_WAIT_MS, undefined);
      await Promise.race([panel.context.ready.catch(() => undefined), wait.promise]);
      wait.cancel();
    }
    return panel.context.isReady && !panel.isDisposed ? panel : null;
  }
}
