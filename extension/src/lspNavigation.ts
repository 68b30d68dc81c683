/**
 * `editor/getDefinition` and `editor/getReferences` answered from JupyterLab's language servers (`@jupyterlab/lsp`,
 * the jupyter-lsp server extension): the engine's `editor_definition` / `editor_references` tools then get what the
 * language server knows (imports followed, types resolved) instead of name matches from its content index.
 *
 * The file need not be open in the lab: when no editor has it, it is opened on the language server here (a virtual
 * document of our own, its text read through the contents API and re-sent when it changed on disk); when an editor
 * has it, its connection and text are used as they are. Whenever the lab cannot answer — language services off (the
 * default in JupyterLab 4: Settings → Language Servers → Activate), no server for the file's language, a file
 * outside the Jupyter root, a notebook (cell positions are not mapped yet) — the answer is `no-server` and the engine
 * falls back to its content index, so a user without a language server still gets answers. A server still starting
 * answers `starting`: the engine asks again within its time budget.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import {
  DocumentConnectionManager,
  VirtualDocument,
  type IDocumentInfo,
  type ILSPCodeExtractorsManager,
  type ILSPConnection,
  type ILSPDocumentConnectionManager,
  type ILSPFeatureManager
} from '@jupyterlab/lsp';

import {
  languageOf,
  pathUnderRoot,
  toEditorLocations,
  toLspPosition,
  type NavigationAnswer
} from './navigationCore';
import type { EditorGetDefinitionParams, EditorGetReferencesParams } from './protocol';

/** How long one request waits for the lab's language server connection before answering `starting`. */
const CONNECT_WAIT_MS = 8000;
/** A bound on one LSP request (the engine bounds the whole call too). */
const REQUEST_WAIT_MS = 20000;

/** For the browser tests: how many requests, and how the last ones were answered (`lsp`: by the language server). */
export interface NavigationStats {
  definition: number;
  references: number;
  answers: Array<{ kind: 'definition' | 'references'; status: string; source: 'lsp' | 'none'; message?: string }>;
}

const NO_EXTRACTORS: ILSPCodeExtractorsManager = {
  getExtractors: () => [],
  register: () => undefined
};

class Timeout extends Error {}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Timeout()), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function merge(target: any, source: any): any {
  if (!source || typeof source !== 'object' || Array.isArray(source)) {
    return source ?? target;
  }
  const out: any = { ...(target ?? {}) };
  for (const [key, value] of Object.entries(source)) {
    out[key] = merge(out[key], value);
  }
  return out;
}

/** A file this panel opened on a language server: its virtual document and what it last sent. */
interface Shadow {
  document: VirtualDocument;
  info: IDocumentInfo;
  connection?: ILSPConnection;
}

export class JupyterLspNavigation {
  readonly stats: NavigationStats = { definition: 0, references: 0, answers: [] };
  private readonly _shadows = new Map<string, Shadow>();

  constructor(
    private readonly _app: JupyterFrontEnd,
    private readonly _manager: ILSPDocumentConnectionManager,
    private readonly _features: ILSPFeatureManager | null
  ) {}

  definition(params: EditorGetDefinitionParams): Promise<NavigationAnswer> {
    return this._answer('definition', params.uri, (connection, uri) =>
      connection.clientRequests['textDocument/definition'].request({
        textDocument: { uri },
        position: toLspPosition(params.position)
      })
    );
  }

  references(params: EditorGetReferencesParams): Promise<NavigationAnswer> {
    return this._answer('references', params.uri, (connection, uri) =>
      connection.clientRequests['textDocument/references'].request({
        textDocument: { uri },
        position: toLspPosition(params.position),
        context: { includeDeclaration: params.includeDeclaration ?? true }
      })
    );
  }

  private async _answer(
    kind: 'definition' | 'references',
    uri: string,
    send: (connection: ILSPConnection, documentUri: string) => Promise<unknown>
  ): Promise<NavigationAnswer> {
    this.stats[kind] += 1;
    let answer: NavigationAnswer;
    let source: 'lsp' | 'none' = 'none';
    try {
      const target = await this._connection(uri);
      if ('status' in target) {
        answer = target;
      } else {
        const raw = await within(send(target.connection, target.documentUri), REQUEST_WAIT_MS);
        answer = { status: 'success', locations: toEditorLocations(raw) };
        source = 'lsp';
      }
    } catch (error) {
      answer =
        error instanceof Timeout
          ? { status: 'error', message: "JupyterLab's language server did not answer in time" }
          : { status: 'error', message: error instanceof Error ? error.message : String(error) };
    }
    this.stats.answers.push({ kind, status: answer.status, source, message: answer.message });
    this.stats.answers.splice(0, this.stats.answers.length - 50); // the last 50 only
    return answer;
  }

  /** The connection to ask about *uri* and the URI the server knows the file by, or why there is none. */
  private async _connection(
    uri: string
  ): Promise<{ connection: ILSPConnection; documentUri: string } | NavigationAnswer> {
    const servers = this._manager.languageServerManager;
    if (!servers.isEnabled) {
      return noServer("JupyterLab's language servers are off (Settings → Language Servers → Activate)");
    }
    const path = pathUnderRoot(uri, PageConfig.getOption('rootUri'));
    if (path === null) {
      return noServer('the file is not under the Jupyter root the language servers serve');
    }
    if (path.endsWith('.ipynb')) {
      return noServer('notebooks are not asked of the language server yet');
    }
    const fileType = this._app.docRegistry.getFileTypesForPath(path)[0];
    const language = languageOf(path, fileType?.name);
    if (!language) {
      return noServer(`no language known for ${path}`);
    }
    try {
      await within(servers.ready, CONNECT_WAIT_MS);
    } catch (error) {
      if (error instanceof Timeout) {
        return { status: 'starting', message: "JupyterLab's language servers are loading" };
      }
      throw error;
    }
    if (servers.getMatchingServers({ language }).length === 0) {
      return noServer(`no language server for ${language} is running in JupyterLab`);
    }
    // An editor of the lab has the file: ask on its connection, about its (maybe unsaved) text.
    const key = encodeURI(path);
    const open = this._manager.documents.get(key);
    const shadow = this._shadows.get(key);
    if (open && open !== shadow?.document) {
      const connection = this._manager.connections.get(key);
      const documentUri = DocumentConnectionManager.solveUris(open, language)?.document;
      if (connection && connection.isReady && documentUri) {
        return { connection, documentUri };
      }
    }
    return this._shadowConnection(path, key, language);
  }

  private async _shadowConnection(
    path: string,
    key: string,
    language: string
  ): Promise<{ connection: ILSPConnection; documentUri: string } | NavigationAnswer> {
    let shadow = this._shadows.get(key);
    if (!shadow) {
      const document = new VirtualDocument({
        language,
        foreignCodeExtractors: NO_EXTRACTORS,
        path,
        fileExtension: path.slice(path.lastIndexOf('.') + 1),
        hasLspSupportedFile: true,
        standalone: true
      });
      const documentUri = DocumentConnectionManager.solveUris(document, language)?.document;
      if (!documentUri) {
        document.dispose();
        return noServer(`no language server for ${language} is running in JupyterLab`);
      }
      shadow = { document, info: { uri: documentUri, version: 0, text: '', languageId: language } };
      this._shadows.set(key, shadow);
    }
    const capabilities = merge(
      {
        textDocument: {
          synchronization: { dynamicRegistration: true, willSave: false, didSave: true, willSaveWaitUntil: false },
          definition: { dynamicRegistration: false, linkSupport: false },
          references: { dynamicRegistration: false }
        },
        workspace: { didChangeConfiguration: { dynamicRegistration: true } }
      },
      this._features?.clientCapabilities() ?? {}
    );
    let connection: ILSPConnection | undefined;
    try {
      connection = await within(
        this._manager.connect({
          virtualDocument: shadow.document,
          language,
          capabilities,
          hasLspSupportedFile: true
        }),
        CONNECT_WAIT_MS
      );
    } catch (error) {
      if (error instanceof Timeout) {
        return { status: 'starting', message: `the ${language} language server is starting` };
      }
      throw error;
    }
    if (!connection || !connection.isReady) {
      return { status: 'error', message: `could not connect to the ${language} language server` };
    }
    // The language server reads what it was sent for an open document: send the file as it is on disk now.
    const model = await this._app.serviceManager.contents.get(path, { type: 'file', format: 'text', content: true });
    const text = typeof model.content === 'string' ? model.content : '';
    if (shadow.connection !== connection) {
      shadow.connection = connection;
      shadow.info.text = text;
      connection.sendOpen(shadow.info);
    } else if (shadow.info.text !== text) {
      shadow.info.text = text;
      connection.sendChange(shadow.info);
    }
    return { connection, documentUri: shadow.info.uri };
  }
}

function noServer(message: string): NavigationAnswer {
  return { status: 'no-server', message };
}
