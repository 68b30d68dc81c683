/**
 * JupyterLab plug-in: the ECA chat side panel.
 *
 * It opens one WebSocket per page to the jupyter-server extension (`<base_url>api/eca/v1/ws`, Jupyter auth: the
 * page's token when JupyterLab appends one, otherwise the login cookie — the same as kernel WebSockets) and speaks
 * ECA JSON-RPC over it: `initialize` with no workspace folders (the server uses its root), `initialized`, then
 * chats. `$/showMessage` becomes a JupyterLab notification; `editor/getDiagnostics` is answered from the open
 * notebooks' error outputs, and the engine's `notebook/*` requests (read, edit, run cells) from the open notebooks.
 * `editor/getDefinition` / `editor/getReferences` are answered from JupyterLab's language servers when its LSP plug-in is
 * there (lspNavigation.ts; otherwise, or with no server for the file, the engine answers from its content index).
 */

import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { IEditorTracker } from '@jupyterlab/fileeditor';
import { ILSPDocumentConnectionManager, ILSPFeatureManager } from '@jupyterlab/lsp';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';

import { EcaClient, LAST_CHAT_KEY } from './client';
import { inlineCompletionPlugin } from './inlineCompletion';
import { JupyterEditorContext } from './jupyterContext';
import { JupyterLspNavigation } from './lspNavigation';
import { JupyterNotebookAccess } from './notebookAccess';
import { serveNotebookComms } from './notebookComm';
import { outputActionsPlugin } from './outputActions';
import { ConnectModelView, ProvidersApi } from './providersApi';
import { rewritePlugin } from './rewrite';
import { renderStats, resetRenderStats } from './stats';
import { IEcaChat } from './tokens';
import { RpcError } from './transport';
import { ChatPanel } from './widgets/ChatPanel';

export { IEcaChat } from './tokens';

const PLUGIN_ID = 'eca-notebook:chat';
export const PANEL_ID = 'eca-chat-panel';
export const SOCKET_PATH = 'api/eca/v1/ws';
export const CONNECT_MODEL_COMMAND = 'eca-notebook:connect-model';

const chatIcon = new LabIcon({
  name: 'eca-notebook:chat',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">' +
    '<path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5' +
    'a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01z"/></svg>'
});

/** The socket URL for these server settings (token appended the way JupyterLab does it for kernels). */
export function socketUrl(settings: ServerConnection.ISettings): string {
  let url = URLExt.join(settings.wsUrl, SOCKET_PATH);
  if (settings.appendToken && settings.token) {
    url += `?token=${encodeURIComponent(settings.token)}`;
  }
  return url;
}

function describe(error: unknown): string {
  if (error instanceof RpcError) {
    return `${error.message} (${error.code})`;
  }
  return error instanceof Error ? error.message : String(error);
}

function safeStorage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

const plugin: JupyterFrontEndPlugin<IEcaChat> = {
  id: PLUGIN_ID,
  description: 'A chat panel for the ECA code assistant.',
  autoStart: true,
  provides: IEcaChat,
  optional: [
    IRenderMimeRegistry,
    INotebookTracker,
    IEditorTracker,
    ICommandPalette,
    ILayoutRestorer,
    ILabShell,
    ILSPDocumentConnectionManager,
    ILSPFeatureManager
  ],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry | null,
    notebooks: INotebookTracker | null,
    editors: IEditorTracker | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    labShell: ILabShell | null,
    lspDocuments: ILSPDocumentConnectionManager | null,
    lspFeatures: ILSPFeatureManager | null
  ): IEcaChat => {
    const settings = ServerConnection.makeSettings();
    const editorContext = new JupyterEditorContext(app, notebooks, editors);
    const notebookAccess = notebooks ? new JupyterNotebookAccess(notebooks) : undefined;
    if (notebooks && notebookAccess) {
      serveNotebookComms(notebooks, notebookAccess); // a %eca in a notebook reaches its page the same way
    }
    // Code navigation from the lab's language servers when its LSP plug-in is there; without it the engine answers
    // the navigation tools from its content index.
    const navigation = lspDocuments ? new JupyterLspNavigation(app, lspDocuments, lspFeatures) : undefined;
    (window as any).__ecaNavigation = navigation ?? null; // for the browser tests: its answers and `stats`
    const client = new EcaClient({
      url: () => socketUrl(settings),
      createSocket: url => new settings.WebSocket(url) as any,
      clientInfo: { name: 'jupyterlab-eca-panel', version: '0.1.0' },
      storage: safeStorage(),
      // per JupyterLab workspace (/lab/workspaces/<name>): each workspace reopens its own chat after a reload
      lastChatKey: `${LAST_CHAT_KEY}:${PageConfig.getOption('workspace') || 'default'}`,
      diagnostics: notebooks ? uri => editorContext.diagnostics(uri) : undefined,
      notebooks: notebookAccess,
      navigation,
      onMessage: message => {
        Notification.emit(message.message, message.type, {
          autoClose: message.type === 'error' ? false : 8000
        });
      },
      logger: console
    });

    const onError = (error: unknown) => {
      Notification.error(`ECA: ${describe(error)}`, { autoClose: 8000 });
    };

    const connectView = new ConnectModelView();
    const providers = new ProvidersApi(settings);
    const panel = new ChatPanel({ client, rendermime, editors: editorContext, onError, connectView, providers });
    panel.id = PANEL_ID;
    panel.title.icon = chatIcon;
    panel.title.caption = 'ECA chat';
    app.shell.add(panel, 'right', { rank: 100 });
    restorer?.add(panel, 'eca-chat');

    const open = () => {
      if (labShell) {
        labShell.activateById(PANEL_ID);
      } else {
        app.shell.activateById(PANEL_ID);
      }
    };

    app.commands.addCommand('eca:open-chat', {
      label: 'ECA: Open Chat',
      execute: open
    });
    app.commands.addCommand('eca:new-chat', {
      label: 'ECA: New Chat',
      execute: () => {
        client.newChat();
        open();
      }
    });
    // Opens the panel on its "Connect a model" view (also run by the demo-model notice's button).
    app.commands.addCommand(CONNECT_MODEL_COMMAND, {
      label: 'ECA: Connect a Model…',
      execute: () => {
        open();
        connectView.open();
      }
    });
    palette?.addItem({ command: 'eca:open-chat', category: 'ECA' });
    palette?.addItem({ command: CONNECT_MODEL_COMMAND, category: 'ECA' });
    palette?.addItem({ command: 'eca:new-chat', category: 'ECA' });

    // For the browser test and the streaming benchmark: render counters and the store's flush counts.
    (window as any).__ecaPanel = {
      stats: renderStats,
      resetStats: resetRenderStats,
      store: client.store,
      client,
      restored: app.restored
    };

    client.connect();
    return { client, open };
  }
};

// The chat panel, and what uses its client: ghost text (inlineCompletion.ts), "Rewrite with ECA…" (rewrite.ts) and
// Fix / Explain / Add to chat on notebook outputs (outputActions.ts).
export default [plugin, inlineCompletionPlugin, rewritePlugin, outputActionsPlugin];
