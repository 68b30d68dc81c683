/**
 * Ghost text from the ECA server in notebook cells and file editors: a JupyterLab 4 inline completion provider
 * (`ICompletionProviderManager.registerInlineProvider`) that asks `completion/inline` over the panel's WebSocket.
 *
 * - JupyterLab's inline completer calls `fetch` after its debouncer (our provider's default: {@link DEBOUNCE_MS})
 *   and shows the suggestion as ghost text — at the end of a line, also before the brackets and quotes JupyterLab
 *   closed (`print(|)`); on the new line after Enter, where JupyterLab never asks by itself, {@link BlankLineTrigger}
 *   invokes it after the same delay; Tab accepts (JupyterLab's `inline-completer:accept`), Alt+] / Alt+[
 *   cycle, Escape or typing on dismisses. The provider is enabled by default (its `schema.default`), so nothing needs
 *   to be set up; Settings → Inline Completer → "ECA provider" turns it off or changes the delays.
 * - Every keystroke in the document aborts the pending request (the server gets `$/cancelRequest` and stops the
 *   model); an answer for an older version of the document is dropped (see `inlineCore.ts`).
 * - In a notebook the request carries the preceding code cells and the kernel's live variables (names, types,
 *   shapes, DataFrame columns). The kernel is asked with a silent `execute_request` whose only work is a
 *   `user_expressions` entry (no execution count, no history, no output), and only when it is idle: the answer is
 *   cached per kernel and refreshed after cells run; a busy kernel is never waited on (the last summary is used).
 * - A failure (`error` result of type warning/error) is shown quietly: JupyterLab's small error mark at the cursor,
 *   with the message as its tooltip, the same message at most once a minute; "nothing to suggest" (`info`) shows
 *   nothing.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { CodeEditor } from '@jupyterlab/codeeditor';
import {
  CompletionHandler,
  ICompletionProviderManager,
  IInlineCompletionContext,
  InlineCompletionTriggerKind,
  IInlineCompletionItem,
  IInlineCompletionList,
  IInlineCompletionProvider
} from '@jupyterlab/completer';
import { Text } from '@jupyterlab/coreutils';
import { IEditorTracker } from '@jupyterlab/fileeditor';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import type { ISignal } from '@lumino/signaling';

import type { EcaClient } from './client';
import {
  ContextCell,
  InlineRequests,
  KERNEL_SUMMARY_EXPRESSION,
  KernelVariable,
  WarningThrottle,
  atLineEnd,
  composeContext,
  parseKernelSummary,
  wantsBlankLineSuggestion
} from './inlineCore';
import { IEcaChat } from './tokens';

export const INLINE_PROVIDER_ID = 'eca-notebook:inline';
/** JupyterLab's debouncer delay for our provider (ms since the last keystroke before `fetch` is called). */
export const DEBOUNCE_MS = 200;
/** How long a suggestion may take before it is given up (and cancelled on the server). */
export const TIMEOUT_MS = 10000;
/** How long a request waits for a first look at a kernel's namespace (never for a busy kernel). */
const KERNEL_WAIT_MS = 150;
const KERNEL_TIMEOUT_MS = 3000;

const ecaIcon = new LabIcon({
  name: 'eca-notebook:inline',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">' +
    '<path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5' +
    'a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01z"/></svg>'
});

function decodeBase64(data: string): string {
  const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

// -- the kernel's namespace ---------------------------------------------------------------------------------------

interface KernelEntry {
  variables: KernelVariable[];
  stale: boolean;
  loaded: boolean;
  refreshing: Promise<void> | null;
  python: boolean | null;
  waitingForIdle: boolean;
}

/**
 * The live variables of notebook kernels, cached per kernel. A kernel is looked at only once a completion was asked
 * in one of its notebooks, then again after its cells ran — always when it is idle, never queued behind user code.
 */
export class KernelNamespace {
  /** How many inspections answered (tests wait on it). */
  inspections = 0;
  private readonly _entries = new WeakMap<Kernel.IKernelConnection, KernelEntry>();

  constructor() {
    NotebookActions.executed.connect((_, args) => {
      const panel = args.notebook.parent;
      const kernel = panel instanceof NotebookPanel ? panel.sessionContext.session?.kernel : null;
      const entry = kernel ? this._entries.get(kernel) : undefined;
      if (kernel && entry) {
        entry.stale = true;
        this._refreshWhenIdle(kernel, entry);
      }
    });
  }

  /** The kernel's variables as last seen; a stale summary is refreshed if the kernel is idle (waiting a little). */
  async variables(kernel: Kernel.IKernelConnection | null | undefined): Promise<KernelVariable[]> {
    if (!kernel || kernel.isDisposed) {
      return [];
    }
    let entry = this._entries.get(kernel);
    if (!entry) {
      entry = { variables: [], stale: true, loaded: false, refreshing: null, python: null, waitingForIdle: false };
      this._entries.set(kernel, entry);
      kernel.statusChanged.connect((_, status) => {
        if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
          entry!.variables = [];
          entry!.stale = true;
          entry!.loaded = false;
        }
      });
    }
    if (entry.stale && !entry.refreshing && kernel.status === 'idle') {
      this._refresh(kernel, entry);
    }
    if (entry.refreshing && !entry.loaded) {
      await Promise.race([entry.refreshing, new Promise(resolve => setTimeout(resolve, KERNEL_WAIT_MS))]);
    }
    return entry.variables;
  }

  private _refreshWhenIdle(kernel: Kernel.IKernelConnection, entry: KernelEntry): void {
    if (kernel.status === 'idle') {
      if (!entry.refreshing) {
        this._refresh(kernel, entry);
      }
      return;
    }
    if (entry.waitingForIdle) {
      return;
    }
    entry.waitingForIdle = true;
    const onStatus = (_: unknown, status: Kernel.Status) => {
      if (status === 'idle' || status === 'dead' || kernel.isDisposed) {
        kernel.statusChanged.disconnect(onStatus);
        entry.waitingForIdle = false;
        if (status === 'idle' && entry.stale && !entry.refreshing) {
          this._refresh(kernel, entry);
        }
      }
    };
    kernel.statusChanged.connect(onStatus);
  }

  private _refresh(kernel: Kernel.IKernelConnection, entry: KernelEntry): void {
    entry.stale = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Bounded as a whole: a kernel that never answers (its info, the request) must not hold later looks up.
    entry.refreshing = Promise.race([
      this._inspect(kernel, entry),
      new Promise<void>(resolve => {
        timer = setTimeout(resolve, KERNEL_TIMEOUT_MS);
      })
    ])
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(timer);
        entry.refreshing = null;
        entry.loaded = true;
      });
  }

  private async _inspect(kernel: Kernel.IKernelConnection, entry: KernelEntry): Promise<void> {
    if (entry.python === null) {
      const info = await kernel.info;
      entry.python = String(info?.language_info?.name ?? '').toLowerCase() === 'python';
    }
    if (!entry.python || kernel.status !== 'idle') {
      return;
    }
    const future = kernel.requestExecute(
      {
        code: '',
        silent: true,
        store_history: false,
        allow_stdin: false,
        stop_on_error: false,
        user_expressions: { eca: KERNEL_SUMMARY_EXPRESSION }
      },
      true
    );
    const reply = await future.done;
    const value: any = (reply?.content as any)?.user_expressions?.eca;
    if (value?.status === 'ok' && typeof value.data?.['text/plain'] === 'string') {
      entry.variables = parseKernelSummary(value.data['text/plain'], decodeBase64);
      this.inspections += 1;
    }
  }
}

// -- the provider -------------------------------------------------------------------------------------------------

interface Target {
  editor: CodeEditor.IEditor;
  path?: string;
  context?: () => Promise<string | undefined>;
}

/**
 * Timings of the latest requests (for the benchmark, `performance.now()`): when `fetch` was called, when the request
 * went out (its context composed), and when the answer was ready.
 */
export interface InlineTiming {
  fetched: number;
  sent: number;
  answered: number;
  outcome: string;
}

export interface EcaInlineProviderOptions {
  client: EcaClient;
  notebooks: INotebookTracker | null;
  editors: IEditorTracker | null;
  kernels?: KernelNamespace | null;
}

export class EcaInlineProvider implements IInlineCompletionProvider {
  readonly name = 'ECA';
  readonly identifier = INLINE_PROVIDER_ID;
  readonly icon = ecaIcon;
  /** Our defaults in Settings → Inline Completer (JupyterLab merges the user's choices over them). */
  readonly schema = {
    // autoFillInMiddle: JupyterLab counts `print(|)` as mid-line; `fetch` itself declines the real middle
    default: { enabled: true, debouncerDelay: DEBOUNCE_MS, timeout: TIMEOUT_MS, autoFillInMiddle: true }
  };
  readonly requests: InlineRequests;
  readonly timings: InlineTiming[] = [];
  /** The user's settings for this provider (Settings → Inline Completer): {@link BlankLineTrigger} follows them. */
  enabled = true;
  debouncerDelay = DEBOUNCE_MS;
  private _timeoutMs = TIMEOUT_MS;
  private readonly _warnings = new WarningThrottle();

  constructor(private readonly _options: EcaInlineProviderOptions) {
    this.requests = new InlineRequests(_options.client);
  }

  configure(settings: { [property: string]: unknown }): void {
    const timeout = Number(settings?.timeout);
    if (Number.isFinite(timeout) && timeout > 0) {
      this._timeoutMs = timeout;
    }
    const delay = Number(settings?.debouncerDelay);
    if (Number.isFinite(delay) && delay >= 0) {
      this.debouncerDelay = delay;
    }
    this.enabled = settings?.enabled !== false;
  }

  async fetch(request: CompletionHandler.IRequest, context: IInlineCompletionContext): Promise<IInlineCompletionList> {
    const fetched = performance.now();
    const target = this._target(context);
    if (!target || this._options.client.connection !== 'open') {
      return { items: [] };
    }
    const document = target.editor.model.sharedModel;
    const cursor = Text.charIndexToJsIndex(request.offset, request.text);
    if (context.triggerKind === InlineCompletionTriggerKind.Automatic && !atLineEnd(request.text, cursor)) {
      return { items: [] }; // code right of the cursor: a pause while editing a line asks nothing (Alt+\ does)
    }
    const extra = target.context ? await target.context() : undefined;
    if (document.getSource() !== request.text) {
      return { items: [] }; // typed on while the kernel was looked at: JupyterLab asks again
    }
    const sent = performance.now();
    const outcome = await this.requests.request({
      document,
      text: request.text,
      cursor,
      path: target.path,
      context: extra,
      timeoutMs: this._timeoutMs,
      watch: onChange => {
        const slot = () => onChange(document.getSource());
        document.changed.connect(slot);
        return () => document.changed.disconnect(slot);
      }
    });
    this.timings.push({ fetched, sent, answered: performance.now(), outcome: outcome.kind });
    if (this.timings.length > 500) {
      this.timings.splice(0, this.timings.length - 500);
    }
    const items: IInlineCompletionItem[] = [];
    if (outcome.kind === 'suggestion') {
      items.push({ insertText: outcome.insertText });
    } else if (outcome.kind === 'error' && outcome.type !== 'info' && this._warnings.shouldShow(outcome.message)) {
      // JupyterLab's quiet error mark at the cursor (gone after a few seconds), the message as its tooltip.
      console.warn(`ECA inline completion: ${outcome.message}`);
      items.push({ insertText: '', error: { message: `ECA: ${outcome.message}` } });
    }
    return { items };
  }

  /** The editor, path and context of a notebook's active code cell or of a file editor; null elsewhere. */
  private _target(context: IInlineCompletionContext): Target | null {
    const widget = context.widget;
    const given: CodeEditor.IEditor | null | undefined = (context as any).editor;
    const { notebooks, editors, kernels } = this._options;
    if (notebooks?.has(widget) && widget instanceof NotebookPanel) {
      const notebook = widget.content;
      const cell = notebook.activeCell;
      const editor = given ?? cell?.editor;
      if (!cell || !editor || cell.model.type !== 'code') {
        return null;
      }
      const index = notebook.activeCellIndex;
      const path = widget.context.path;
      return {
        editor,
        path: `${path}#cell-${index + 1}`,
        context: async () => {
          const cells: ContextCell[] = [];
          notebook.widgets.slice(0, Math.max(0, index)).forEach((other, i) => {
            if (other.model.type === 'code') {
              cells.push({ source: other.model.sharedModel.getSource(), index: i + 1 });
            }
          });
          const variables = kernels ? await kernels.variables(widget.sessionContext.session?.kernel) : [];
          return composeContext({ cells, variables, notebook: basename(path) });
        }
      };
    }
    const doc = editors?.find(candidate => candidate === widget);
    if (doc) {
      const editor = given ?? doc.content.editor;
      return { editor, path: doc.context.path };
    }
    return null;
  }
}

interface Watched {
  widget: { id: string };
  document: { changed: ISignal<any, { sourceChange?: unknown }> };
  editor: () => CodeEditor.IEditor | null;
}

/**
 * Asks for ghost text on the new line after Enter. JupyterLab's inline completer asks by itself only after a
 * keystroke that leaves code left of the cursor, so `def f(x):` + Enter never got a suggestion (issue #30). This
 * watches the document being typed in (the active cell of the current notebook, the current file editor) and, when
 * a change leaves the focused editor's cursor on an empty line under code ({@link wantsBlankLineSuggestion}) and
 * nothing changes for the provider's debouncer delay, invokes the inline completer there — as Alt+\ would.
 */
export class BlankLineTrigger {
  /** How many times it invoked the inline completer (tests read it). */
  invoked = 0;
  private _timer: ReturnType<typeof setTimeout> | undefined;
  private readonly _watched = new Map<string, () => void>();

  constructor(
    private readonly _manager: ICompletionProviderManager,
    private readonly _provider: EcaInlineProvider,
    notebooks: INotebookTracker | null,
    editors: IEditorTracker | null
  ) {
    const watchCell = () => {
      const panel = notebooks?.currentWidget;
      const cell = notebooks?.activeCell;
      // the cell's model, not its editor: a cell not rendered yet has no editor (it is looked up when asking)
      this._watch(panel && cell ? { widget: panel, document: cell.model.sharedModel, editor: () => cell.editor } : null,
        'cell');
    };
    notebooks?.activeCellChanged.connect(watchCell);
    notebooks?.currentChanged.connect(watchCell);
    const watchFile = () => {
      const doc = editors?.currentWidget;
      this._watch(
        doc ? { widget: doc, document: doc.content.model.sharedModel, editor: () => doc.content.editor } : null,
        'file'
      );
    };
    editors?.currentChanged.connect(watchFile);
    watchCell();
    watchFile();
  }

  private _watch(target: Watched | null, slot: string): void {
    this._watched.get(slot)?.();
    this._watched.delete(slot);
    if (!target) {
      return;
    }
    const onChange = (_: unknown, change: { sourceChange?: unknown }) => {
      if (change.sourceChange) {
        this._schedule(target);
      }
    };
    target.document.changed.connect(onChange);
    this._watched.set(slot, () => target.document.changed.disconnect(onChange));
  }

  private _schedule(target: Watched): void {
    clearTimeout(this._timer);
    if (!this._provider.enabled) {
      return;
    }
    this._timer = setTimeout(() => {
      const editor = target.editor();
      if (!editor || editor.isDisposed || !editor.hasFocus()) {
        return; // a change the user did not type (a tool's edit, a collaborator)
      }
      const { start, end } = editor.getSelection();
      if (start.line !== end.line || start.column !== end.column) {
        return;
      }
      const text = editor.model.sharedModel.getSource();
      const cursor = editor.getOffsetAt(editor.getCursorPosition());
      if (wantsBlankLineSuggestion(text, cursor) && this._manager.inline) {
        this.invoked += 1;
        this._manager.inline.invoke(target.widget.id);
      }
    }, this._provider.debouncerDelay);
  }
}

export const inlineCompletionPlugin: JupyterFrontEndPlugin<void> = {
  id: 'eca-notebook:inline-completion',
  description: 'Inline completions (ghost text) from the ECA server in notebook cells and file editors.',
  autoStart: true,
  requires: [IEcaChat],
  optional: [ICompletionProviderManager, INotebookTracker, IEditorTracker],
  activate: (
    _app: JupyterFrontEnd,
    chat: IEcaChat,
    manager: ICompletionProviderManager | null,
    notebooks: INotebookTracker | null,
    editors: IEditorTracker | null
  ): void => {
    if (!manager) {
      return; // the completer extension is disabled: no inline completion in this JupyterLab
    }
    const kernels = notebooks ? new KernelNamespace() : null;
    const provider = new EcaInlineProvider({ client: chat.client, notebooks, editors, kernels });
    manager.registerInlineProvider(provider);
    const blankLines = new BlankLineTrigger(manager, provider, notebooks, editors);
    // For the browser tests and the benchmark: request counters and timings.
    (window as any).__ecaInline = {
      provider,
      kernels,
      blankLines,
      stats: provider.requests.stats,
      timings: provider.timings
    };
  }
};
