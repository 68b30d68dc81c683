/**
 * The panel's ECA client: the handshake on every (re)connect, the config the server pushes (models, behaviours),
 * the chat list, and the user's actions (prompt, stop, approve, reject, delete, open, pickers, completions).
 *
 * It owns a {@link JsonRpcTransport} and a {@link ChatStore}; the React widgets only read the store and call
 * methods here. Pure TypeScript (no JupyterLab imports): `test/client.test.ts` drives it against an in-memory
 * server, and the JupyterLab glue (URL and auth, notifications, editor context) lives in `index.ts`.
 */

import type {
  ChatAskQuestionParams,
  ChatCommand,
  ChatContext,
  ChatOpenResult,
  ChatPromptParams,
  ChatPromptResult,
  ChatToolCallUndoResult,
  ClientNotifications,
  ClientRequests,
  CompletionInlineParams,
  CompletionInlineResult,
  ConfigUpdatedParams,
  EditorDiagnostic,
  EditorGetDefinitionParams,
  EditorGetDefinitionResult,
  EditorGetReferencesParams,
  EditorGetReferencesResult,
  JobSummary,
  McpAddServerParams,
  McpAddServerResult,
  McpRemoveServerResult,
  McpUpdateServerParams,
  McpUpdateServerResult,
  NotebookApplyEditParams,
  NotebookApplyEditResult,
  NotebookGetCellsParams,
  NotebookGetCellsResult,
  NotebookRunCellsParams,
  NotebookRunCellsResult,
  RewriteContentReceivedParams,
  RewritePromptParams,
  RewritePromptResult,
  ShowMessageParams
} from './protocol';
import { ChatStore, ChatView, QueuedPrompt, Role, newChat, resetChat } from './model';
import { Questions } from './questions';
import {
  Backoff,
  Clock,
  ConnectionState,
  JsonRpcTransport,
  RequestOptions,
  RpcError,
  SocketFactory
} from './transport';

export interface ClientConfig {
  models: string[];
  behaviors: string[];
  model?: string;
  behavior?: string;
  /** The session-wide trust mode (a `config/updated` `selectTrust` without `chatId`): a chat without its own. */
  trust?: boolean;
  welcomeMessage?: string;
  /** The selected model's variants (`config/updated` `variants`: reasoning efforts…; empty: the model has none). */
  variants?: string[];
  /** The selected variant (`selectVariant`; absent: none), sent with every prompt and model change. */
  variant?: string;
}

/**
 * Answers the engine's notebook requests from the notebooks open in this tab (see `notebookAccess.ts`); each answers
 * `open: false` for a notebook it does not have open, and the engine then works on the file.
 */
export interface NotebookProvider {
  getCells(params: NotebookGetCellsParams): Promise<NotebookGetCellsResult> | NotebookGetCellsResult;
  applyEdit(params: NotebookApplyEditParams): Promise<NotebookApplyEditResult> | NotebookApplyEditResult;
  /** `signal` aborts when the server cancels the request: interrupt the kernel and answer with what ran. */
  runCells(params: NotebookRunCellsParams, signal?: AbortSignal): Promise<NotebookRunCellsResult>;
}

/**
 * Answers `editor/getDefinition` and `editor/getReferences` (see `lspNavigation.ts`): a `no-server` or `error` status
 * makes the engine answer from its content index instead.
 */
export interface NavigationProvider {
  definition(params: EditorGetDefinitionParams): Promise<EditorGetDefinitionResult>;
  references(params: EditorGetReferencesParams): Promise<EditorGetReferencesResult>;
}

export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface EcaClientOptions {
  url: string | (() => string);
  clientInfo?: { name: string; version?: string };
  createSocket?: SocketFactory;
  backoff?: Partial<Backoff>;
  clock?: Clock;
  store?: ChatStore;
  /** Answers `editor/getDiagnostics`; the capability is advertised only when given. */
  diagnostics?: (uri?: string) => Promise<EditorDiagnostic[]> | EditorDiagnostic[];
  /**
   * Answers `notebook/getCells`, `notebook/applyEdit` and `notebook/runCells`; the capability
   * (`capabilities.codeAssistant.editor.notebooks`) is advertised and the requests are served only when given.
   */
  notebooks?: NotebookProvider;
  /**
   * Answers `editor/getDefinition` / `editor/getReferences`; the capabilities (`editor.definition`, `.references`)
   * are advertised and the requests served only when given.
   */
  navigation?: NavigationProvider;
  /** `$/showMessage` and the client's own errors. */
  onMessage?: (message: ShowMessageParams) => void;
  /** Remembers the chat shown last, so a page reload shows it again. */
  storage?: KeyValueStorage | null;
  /** Where in `storage` the open chat's id is kept: one key per JupyterLab workspace, so two tabs on two
   * workspaces each reopen their own chat after a reload (default {@link LAST_CHAT_KEY}). */
  lastChatKey?: string;
  newId?: () => string;
  logger?: Pick<Console, 'debug' | 'warn' | 'error'>;
}

export const LAST_CHAT_KEY = 'eca-notebook:last-chat';

/** One `rewrite/contentReceived` content: started, reasoning, text, replace, error or finished. */
export type RewriteContent = RewriteContentReceivedParams['content'];

function randomId(): string {
  const c: any = (globalThis as any).crypto;
  if (c && typeof c.randomUUID === 'function') {
    return c.randomUUID();
  }
  return 'chat-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 10);
}

/** An MCP server as its last `tool/serverUpdated` described it (the panel's MCP list shows these). */
export interface McpServerInfo {
  name: string;
  status: string;
  tools?: unknown[] | null;
  command?: string | null;
  args?: string[];
  url?: string | null;
  disabled?: boolean | null;
}

export class EcaClient {
  readonly transport: JsonRpcTransport;
  readonly store: ChatStore;
  config: ClientConfig = { models: [], behaviors: [] };
  /** Start-up work the server reports with `$/progress` ("Loading models"), if any. */
  serverProgress: string | null = null;
  /** MCP servers by name, as their last `tool/serverUpdated` described them (status, tools). */
  readonly mcpServers = new Map<string, McpServerInfo>();
  /** The config's custom tools (`customTools`), from the native `tool/serverUpdated`: name, description, and
   * `disabled` when the selected agent is not offered one. */
  customTools: Array<{ name: string; description: string; disabled?: boolean }> = [];
  /** How many times `initialize` succeeded (reconnects count). */
  handshakes = 0;
  /** The model's questions (`chat/askQuestion`) waiting for an answer in the panel, per chat. */
  readonly questions: Questions;
  private readonly _options: EcaClientOptions;
  private _restored = false;
  private _queuedIds = 0;
  /** The background jobs (`jobs/list`, then every `jobs/updated`): running ones and those ended lately. */
  jobs: JobSummary[] = [];
  /** The listeners of the rewrites under way, by rewrite id (until their `finished`). */
  private readonly _rewrites = new Map<string, (content: RewriteContent) => void>();

  constructor(options: EcaClientOptions) {
    this._options = options;
    this.questions = new Questions(() => this.store.changed());
    this.store = options.store ?? new ChatStore();
    this.transport = new JsonRpcTransport({
      url: options.url,
      createSocket: options.createSocket,
      backoff: options.backoff,
      clock: options.clock,
      logger: options.logger,
      handshake: transport => this._handshake(transport)
    });
    this._register();
    this.transport.onStateChange(state => {
      this.store.changed();
      if (state === 'open') {
        void this._afterConnect();
      } else if (state === 'reconnecting' || state === 'disposed') {
        this._endRewrites('the connection to the ECA server was lost');
      }
    });
  }

  get connection(): ConnectionState {
    return this.transport.state;
  }

  connect(): void {
    this.transport.connect();
  }

  dispose(): void {
    this.transport.dispose();
  }

  /** A request typed by the generated method table (protocol.ts). */
  call<M extends keyof ClientRequests>(
    method: M,
    params: ClientRequests[M]['params'],
    options?: RequestOptions
  ): Promise<ClientRequests[M]['result']> {
    return this.transport.request(method, params, options);
  }

  /** A notification typed by the generated method table (protocol.ts). */
  notify<M extends keyof ClientNotifications>(method: M, params: ClientNotifications[M]): Promise<void> {
    return this.transport.notify(method, params);
  }

  // -- connection ----------------------------------------------------------------------------------------------

  private async _handshake(transport: JsonRpcTransport): Promise<void> {
    const info = this._options.clientInfo ?? { name: 'eca-notebook-jupyterlab', version: '0.1.0' };
    const result: any = await transport.requestNow(
      'initialize',
      {
        processId: null,
        clientInfo: info,
        capabilities: {
          codeAssistant: {
            chat: true,
            editor: {
              diagnostics: Boolean(this._options.diagnostics),
              notebooks: Boolean(this._options.notebooks),
              definition: Boolean(this._options.navigation),
              references: Boolean(this._options.navigation)
            },
            chatCapabilities: { askQuestion: true }
          }
        },
        // The server extension fills in its own workspace (the Jupyter root) when this is empty.
        workspaceFolders: []
      },
      { timeoutMs: 15000 }
    );
    // The early revision answers models/behaviours in the result; the newer one sends config/updated next.
    if (result && Array.isArray(result.models)) {
      this._applyConfig({
        chat: {
          models: result.models,
          behaviors: result.chatBehaviors,
          selectModel: result.chatDefaultModel,
          selectBehavior: result.chatDefaultBehavior,
          welcomeMessage: result.chatWelcomeMessage
        }
      });
    }
    transport.notifyNow('initialized', {});
    this.handshakes += 1;
  }

  private async _afterConnect(): Promise<void> {
    // Whatever streamed while we were away is gone: every chat must be replayed before it is shown again.
    this.store.invalidate();
    try {
      await this.refreshChats();
      const current = this.store.current;
      if (!this._restored) {
        this._restored = true;
        const storage = this._options.storage;
        const key = this._options.lastChatKey ?? LAST_CHAT_KEY;
        const last = storage?.getItem(key) ?? (key !== LAST_CHAT_KEY ? storage?.getItem(LAST_CHAT_KEY) : null);
        if (last && this.store.chats.get(last)?.known) {
          await this.selectChat(last);
          return;
        }
        if (last && !current) {
          // not listed (yet): the server may still have it; chat/open says whether it does
          this.store.setCurrent(last);
          const opened = await this.openChat(last).catch(() => null);
          if (opened && opened.found !== false) {
            return;
          }
          this.store.remove(last);
        }
        if (!this.store.current) {
          this.newChat();
        }
        return;
      }
      if (current && current.known) {
        await this.openChat(current.id);
        this._sendQueued(current.id); // its turn ended while the connection was down: the queue goes on
      }
    } catch (error) {
      this._options.logger?.warn('eca: could not restore chats after connecting', error);
    } finally {
      this.refreshJobs().catch(() => undefined); // (a server without jobs/list: none are shown)
    }
  }

  private _register(): void {
    const t = this.transport;
    t.onNotification('config/updated', (params: ConfigUpdatedParams) => this._applyConfig(params));
    t.onNotification('chat/contentReceived', (params: any) => {
      if (params && typeof params.chatId === 'string' && params.content) {
        if (params.role === 'user') {
          this._steerTakenIn(params.chatId, params.content);
        }
        this.store.applyContent(params.chatId, params.role as Role, params.content, params.parentChatId);
      }
    });
    t.onNotification('chat/opened', (params: any) => {
      if (!params?.chatId) {
        return;
      }
      const chat = this.store.ensure(params.chatId);
      chat.known = true;
      if (params.title) {
        chat.title = params.title;
      }
      if (!chat.createdAt) {
        chat.createdAt = Date.now();
        chat.updatedAt = chat.updatedAt ?? chat.createdAt;
      }
      chat.version += 1;
      this.store.changed();
    });
    t.onNotification('chat/deleted', (params: any) => {
      if (params?.chatId) {
        const wasCurrent = this.store.currentId === params.chatId;
        this.store.remove(params.chatId);
        if (wasCurrent) {
          this.newChat();
        }
      }
    });
    t.onNotification('chat/cleared', (params: any) => {
      const chat = params?.chatId ? this.store.chats.get(params.chatId) : undefined;
      if (chat && params.messages) {
        resetChat(chat);
        this.store.changed();
      }
    });
    t.onNotification('chat/statusChanged', (params: any) => {
      if (params?.chatId && params.status) {
        this.store.setStatus(params.chatId, params.status);
        if (params.status === 'idle') {
          this._steersLeft(params.chatId);
          this._sendQueued(params.chatId);
        }
      }
    });
    t.onNotification('jobs/updated', (params: any) => {
      if (params && Array.isArray(params.jobs)) {
        this.jobs = params.jobs;
        this.store.changed();
      }
    });
    t.onNotification('tool/serverUpdated', (params: any) => {
      if (params?.type === 'mcp' && typeof params.name === 'string') {
        this.mcpServers.set(params.name, params);
        this.store.changed();
      } else if (params?.type === 'native' && Array.isArray(params.tools)) {
        this.customTools = params.tools
          .filter((t: any) => t && t.custom === true && typeof t.name === 'string')
          .map((t: any) => ({ name: t.name, description: String(t.description ?? ''), disabled: t.disabled === true }));
        this.store.changed();
      }
    });
    t.onNotification('tool/serverRemoved', (params: any) => {
      if (typeof params?.name === 'string' && this.mcpServers.delete(params.name)) {
        this.store.changed();
      }
    });
    t.onNotification('rewrite/contentReceived', (params: RewriteContentReceivedParams) => {
      const listener = params?.rewriteId ? this._rewrites.get(params.rewriteId) : undefined;
      if (listener && params.content) {
        if (params.content.type === 'finished') {
          this._rewrites.delete(params.rewriteId);
        }
        listener(params.content);
      }
    });
    t.onNotification('$/showMessage', (params: ShowMessageParams) => this._options.onMessage?.(params));
    t.onNotification('$/progress', (params: any) => {
      this.serverProgress = params?.type === 'start' ? String(params.title ?? '') : null;
      this.store.changed();
    });
    t.onRequest('editor/getDiagnostics', async (params: any) => {
      const provider = this._options.diagnostics;
      const diagnostics = provider ? await provider(params?.uri ?? undefined) : [];
      return { diagnostics };
    });
    t.onRequest('chat/askQuestion', (params: ChatAskQuestionParams, signal: AbortSignal) =>
      this.questions.ask(params, signal)
    );
    const navigation = this._options.navigation;
    if (navigation) {
      t.onRequest('editor/getDefinition', (params: EditorGetDefinitionParams) => navigation.definition(params));
      t.onRequest('editor/getReferences', (params: EditorGetReferencesParams) => navigation.references(params));
    }
    const notebooks = this._options.notebooks;
    if (notebooks) {
      t.onRequest('notebook/getCells', (params: NotebookGetCellsParams) => notebooks.getCells(params));
      t.onRequest('notebook/applyEdit', (params: NotebookApplyEditParams) => notebooks.applyEdit(params));
      t.onRequest('notebook/runCells', (params: NotebookRunCellsParams, signal: AbortSignal) =>
        notebooks.runCells(params, signal)
      );
    }
  }

  private _applyConfig(params: ConfigUpdatedParams | null | undefined): void {
    const chat = params?.chat;
    if (!chat) {
      return;
    }
    if (typeof chat.selectTrust === 'boolean' && params?.chatId) {
      // chat-scoped (chat/open, chat/update): this chat's trust indicator only
      const view = this.store.ensure(params.chatId);
      view.trust = chat.selectTrust;
      view.version += 1;
    }
    const config = { ...this.config };
    if (typeof chat.selectTrust === 'boolean' && !params?.chatId) {
      config.trust = chat.selectTrust;
    }
    if (chat.models) {
      config.models = chat.models;
    }
    // `agents`/`selectAgent`: the reference's newer names of the same lists (older servers send only behaviors)
    const agents = chat.agents ?? chat.behaviors;
    if (agents) {
      config.behaviors = agents;
    }
    // a chat-scoped update (the answer to a model choice in a chat, chat/open realigning a reopened chat's stored
    // model) is that chat's: the pickers follow it only while that chat is the one shown
    const scoped = Boolean(params?.chatId) && params?.chatId !== this.store.current?.id;
    if (chat.selectModel && !scoped) {
      config.model = chat.selectModel;
    } else if (config.model && chat.models && !chat.models.includes(config.model)) {
      config.model = chat.models[0];
    }
    const selectAgent = chat.selectAgent ?? chat.selectBehavior;
    if (selectAgent) {
      config.behavior = selectAgent;
    }
    if (chat.variants && !scoped) {
      config.variants = chat.variants;
    }
    if ('selectVariant' in chat && !scoped) {
      // the server's answer to a model or variant choice; null clears it (the model has no such variant)
      config.variant = chat.selectVariant ?? undefined;
    }
    if (chat.welcomeMessage !== undefined) {
      config.welcomeMessage = chat.welcomeMessage;
    }
    this.config = config;
    this.store.changed();
  }

  // -- chats ---------------------------------------------------------------------------------------------------

  /** Start a fresh chat (the server learns of it with the first prompt, under this client-generated id). */
  newChat(): ChatView {
    const current = this.store.current;
    if (current && !current.known && current.items.length === 0) {
      return current; // already on an empty new chat
    }
    const id = (this._options.newId ?? randomId)();
    const chat = newChat(id, { loaded: true, known: false, createdAt: Date.now() });
    this.store.chats.set(id, chat);
    this.store.setCurrent(id);
    this._rememberOpen(id);
    return chat;
  }

  /** The chat open in the panel, remembered for the next page load (a fresh chat too: a reload shows it again). */
  private _rememberOpen(id: string): void {
    try {
      this._options.storage?.setItem(this._options.lastChatKey ?? LAST_CHAT_KEY, id);
    } catch (error) {
      this._options.logger?.debug('eca: could not remember the open chat', error);
    }
  }

  async refreshChats(): Promise<void> {
    const result = await this.call('chat/list', { sortBy: 'updatedAt' });
    this.store.mergeSummaries(Array.isArray(result?.chats) ? result.chats : []);
  }

  /** Show a chat; one whose items are incomplete is replayed from the server first. */
  async selectChat(id: string): Promise<void> {
    this.store.setCurrent(id);
    const chat = this.store.chats.get(id);
    this._rememberOpen(id);
    if (chat && chat.known && !chat.loaded) {
      await this.openChat(id);
    }
  }

  /** `chat/open`: the server replays the chat as notifications, which rebuild it from scratch here. */
  async openChat(id: string): Promise<ChatOpenResult | null> {
    const chat = this.store.ensure(id);
    resetChat(chat);
    chat.loaded = true;
    this.store.changed();
    const result: ChatOpenResult | null = await this.call('chat/open', { chatId: id });
    if (result && result.found === false) {
      chat.known = false;
      chat.loaded = true;
    } else if (result?.title) {
      chat.title = result.title;
    }
    this.store.changed();
    return result ?? null;
  }

  async deleteChat(id: string): Promise<void> {
    const chat = this.store.chats.get(id);
    if (chat?.known) {
      await this.call('chat/delete', { chatId: id });
    }
    const wasCurrent = this.store.currentId === id;
    this.store.remove(id);
    if (wasCurrent) {
      this.newChat();
    }
  }

  // -- prompting -----------------------------------------------------------------------------------------------

  async prompt(message: string, contexts: ChatContext[] = []): Promise<ChatPromptResult> {
    return this._prompt(this.store.current ?? this.newChat(), message, contexts);
  }

  /**
   * Enter while the current chat answers: the message is queued in the chat (shown as queued, removable with
   * {@link removeQueued}) and sent by itself when the turn ends — in order, one per turn. Sent at once when the chat
   * is idle after all.
   */
  queuePrompt(message: string, contexts: ChatContext[] = []): QueuedPrompt {
    const chat = this.store.current ?? this.newChat();
    this._queuedIds += 1;
    const queued: QueuedPrompt = { id: `queued-${this._queuedIds}`, message, contexts };
    chat.queued.push(queued);
    chat.version += 1;
    this.store.changed();
    if (chat.status === 'idle') {
      this._sendQueued(chat.id);
    }
    return queued;
  }

  /** Take a queued message back before it was sent; false when it is gone already. */
  removeQueued(chatId: string, id: string): boolean {
    const chat = this.store.chats.get(chatId);
    const index = chat ? chat.queued.findIndex(q => q.id === id) : -1;
    if (!chat || index < 0) {
      return false;
    }
    chat.queued.splice(index, 1);
    chat.version += 1;
    this.store.changed();
    return true;
  }

  /**
   * Guide the current chat's running answer (`chat/promptSteer`): the server takes the text in at the next round
   * boundary — after the current response and its tool calls — and shows it then as a user message. Until then it is
   * pending (shown above the box, removable with {@link removeSteer}); left when the turn ends, it is sent as a
   * prompt, as the reference server asks of its clients. Null when the chat is not running (send a prompt instead).
   */
  steer(message: string): QueuedPrompt | null {
    const chat = this.store.current;
    if (!chat || chat.status === 'idle' || this.connection !== 'open') {
      return null;
    }
    this._queuedIds += 1;
    const steer: QueuedPrompt = { id: `steer-${this._queuedIds}`, message, contexts: [] };
    chat.steering.push(steer);
    chat.version += 1;
    this.store.changed();
    void this.notify('chat/promptSteer', { chatId: chat.id, message });
    return steer;
  }

  /** Take a pending steer back. The server drops every pending steer of the chat (`chat/promptSteerRemove`): the
   * others are sent again, in order. False when it was taken in already. */
  removeSteer(chatId: string, id: string): boolean {
    const chat = this.store.chats.get(chatId);
    const index = chat ? chat.steering.findIndex(s => s.id === id) : -1;
    if (!chat || index < 0) {
      return false;
    }
    chat.steering.splice(index, 1);
    chat.version += 1;
    this.store.changed();
    void this.notify('chat/promptSteerRemove', { chatId }).then(async () => {
      for (const left of chat.steering) {
        await this.notify('chat/promptSteer', { chatId, message: left.message });
      }
    });
    return true;
  }

  /** A user content while steers are pending: the server took them in (it joins them with newlines). */
  private _steerTakenIn(chatId: string, content: any): void {
    const chat = this.store.chats.get(chatId);
    if (!chat || chat.steering.length === 0 || content?.type !== 'text' || typeof content.text !== 'string') {
      return;
    }
    if (content.text.replace(/\n$/, '') === chat.steering.map(s => s.message).join('\n')) {
      chat.steering = [];
      chat.version += 1;
    }
  }

  /** The turn ended before taking the steers in: they go out as the chat's next prompt. */
  private _steersLeft(chatId: string): void {
    const chat = this.store.chats.get(chatId);
    if (!chat || chat.steering.length === 0) {
      return;
    }
    this._queuedIds += 1;
    const message = chat.steering.map(s => s.message).join('\n');
    chat.queued.unshift({ id: `queued-${this._queuedIds}`, message, contexts: [] });
    chat.steering = [];
    chat.version += 1;
  }

  /** `jobs/list`: the background jobs, kept in {@link jobs} (then updated by `jobs/updated`). */
  async refreshJobs(): Promise<JobSummary[]> {
    const result = await this.call('jobs/list', undefined);
    this.jobs = result?.jobs ?? [];
    this.store.changed();
    return this.jobs;
  }

  /** `jobs/kill`: kill a background job and every process it started; false when it was not running. */
  async killJob(jobId: string): Promise<boolean> {
    const result = await this.call('jobs/kill', { jobId });
    return Boolean(result?.killed);
  }

  /** The chat's turn ended: its oldest queued message goes out (the chat counts as running until the server says). */
  private _sendQueued(chatId: string): void {
    const chat = this.store.chats.get(chatId);
    const next = chat?.queued[0];
    if (!chat || !next || chat.status !== 'idle' || this.connection !== 'open') {
      return;
    }
    chat.queued.shift();
    chat.status = 'running';
    chat.version += 1;
    this.store.changed();
    this._prompt(chat, next.message, next.contexts).catch(error => {
      this.store.setStatus(chat.id, 'idle');
      this._options.logger?.warn('eca: a queued message could not be sent', error);
      const reason = error instanceof Error ? error.message : String(error);
      this._options.onMessage?.({ type: 'error', message: `The queued message could not be sent: ${reason}` });
    });
  }

  private async _prompt(chat: ChatView, message: string, contexts: ChatContext[]): Promise<ChatPromptResult> {
    chat.known = true;
    chat.loaded = true;
    chat.updatedAt = Date.now();
    if (chat.id === this.store.currentId) {
      this._rememberOpen(chat.id);
    }
    const params: ChatPromptParams = { chatId: chat.id, message, contexts };
    if (this.config.model) {
      params.model = this.config.model;
    }
    if (this.config.behavior) {
      params.behavior = this.config.behavior;
    }
    if (this.config.variant) {
      params.variant = this.config.variant;
    }
    if (chat.trust !== undefined) {
      params.trust = chat.trust; // a new chat's toggle reaches the server with its first prompt
    }
    const result: ChatPromptResult = await this.call('chat/prompt', params);
    if (result?.model) {
      chat.model = result.model;
    }
    return result;
  }

  /** Start or stop an MCP server (`mcp/startServer` / `mcp/stopServer`); its new status arrives as a notification. */
  setMcpServerRunning(name: string, running: boolean): Promise<void> {
    return running ? this.notify('mcp/startServer', { name }) : this.notify('mcp/stopServer', { name });
  }

  /** `mcp/addServer`: written to the global or workspace config and started; the row arrives as `tool/serverUpdated`. */
  addMcpServer(params: McpAddServerParams): Promise<McpAddServerResult> {
    return this.call('mcp/addServer', params, { timeoutMs: 60000 });
  }

  /** `mcp/updateServer`: a new command/args or URL, written to the server's config file; it restarts. */
  updateMcpServer(params: McpUpdateServerParams): Promise<McpUpdateServerResult> {
    return this.call('mcp/updateServer', params, { timeoutMs: 60000 });
  }

  /** `mcp/removeServer`: stopped and deleted from its config file; the row goes with `tool/serverRemoved`. */
  removeMcpServer(name: string): Promise<McpRemoveServerResult> {
    return this.call('mcp/removeServer', { name }, { timeoutMs: 60000 });
  }

  /** `mcp/enableServer` / `mcp/disableServer` (persisted as `disabled: true` in its config file). */
  setMcpServerEnabled(name: string, enabled: boolean): Promise<void> {
    return enabled ? this.notify('mcp/enableServer', { name }) : this.notify('mcp/disableServer', { name });
  }

  async stop(chatId?: string): Promise<void> {
    const id = chatId ?? this.store.currentId;
    if (id) {
      const chat = this.store.chats.get(id);
      if (chat && chat.status === 'running') {
        chat.status = 'stopping';
        chat.version += 1;
        this.store.changed();
      }
      await this.notify('chat/promptStop', { chatId: id });
    }
  }

  /** `chat/toolCallApprove`; `hunks`: apply only those hunks of the call's file change (ids of `details.hunks`). */
  async approve(chatId: string, toolCallId: string, save?: 'session', hunks?: string[]): Promise<void> {
    this._answered(chatId, toolCallId);
    await this.notify('chat/toolCallApprove', {
      chatId,
      toolCallId,
      ...(save ? { save } : {}),
      ...(hunks ? { hunks } : {})
    });
  }

  async reject(chatId: string, toolCallId: string): Promise<void> {
    this._answered(chatId, toolCallId);
    await this.notify('chat/toolCallReject', { chatId, toolCallId });
  }

  /**
   * `chat/toolCallUndo`: revert what a finished call changed (its details say `undoable`). On success the card is
   * marked undone; a refusal (changed since, already undone) is shown to the user as a warning.
   */
  async undoToolCall(chatId: string, toolCallId: string): Promise<ChatToolCallUndoResult> {
    const result = await this.call('chat/toolCallUndo', { chatId, toolCallId });
    if (result?.undone) {
      const chat = this.store.chats.get(chatId);
      const item = chat?._tools.get(toolCallId);
      if (chat && item) {
        item.undone = true;
        item.version += 1;
        chat.version += 1;
        this.store.changed();
      }
    } else {
      this._options.onMessage?.({ type: 'warning', message: result?.message || 'The tool call could not be undone.' });
    }
    return result;
  }

  /**
   * `chat/rollback`: remove the user message `contentId` and everything after it; `revertFiles` also reverts the file
   * changes made since. The server answers after `chat/cleared` and the kept messages, which rebuild the chat here.
   * Refused (an error) while the chat runs a prompt.
   */
  async rewind(chatId: string, contentId: string, revertFiles = true): Promise<void> {
    const include: Array<'messages' | 'tools'> = revertFiles ? ['messages', 'tools'] : ['messages'];
    await this.call('chat/rollback', { chatId, contentId, include });
  }

  /**
   * `chat/fork`: a new chat holding this one up to the user message `contentId` and its answer, shown at once. Its
   * `chat/opened` and contents arrive before the answer, so it needs no replay. Returns the new chat's id.
   */
  async fork(chatId: string, contentId: string): Promise<string | null> {
    const result = await this.call('chat/fork', { chatId, contentId });
    const id = result?.chatId;
    if (!id) {
      return null;
    }
    const chat = this.store.ensure(id);
    chat.known = true;
    chat.loaded = true;
    await this.selectChat(id);
    return id;
  }

  /** Hide the buttons at once; the server's toolCallRunning / toolCallRejected follows. */
  private _answered(chatId: string, toolCallId: string): void {
    const item = this.store.chats.get(chatId)?._tools.get(toolCallId);
    if (item && item.state === 'waiting') {
      item.state = 'approved';
      item.version += 1;
      this.store.changed();
    }
  }

  // -- pickers and completion ----------------------------------------------------------------------------------

  async selectModel(model: string): Promise<void> {
    this.config = { ...this.config, model };
    this.store.changed();
    await this._modelChanged();
  }

  /** Choose the model's variant (undefined: none); the server answers with `config/updated` `selectVariant`. */
  async selectVariant(variant: string | undefined): Promise<void> {
    this.config = { ...this.config, variant };
    this.store.changed();
    await this._modelChanged();
  }

  /** `chat/selectedModelChanged` with the model and the variant chosen (the reference's way to pick a variant). */
  private async _modelChanged(): Promise<void> {
    const model = this.config.model;
    if (!model) {
      return;
    }
    const chatId = this.store.current?.known ? this.store.current.id : undefined;
    const variant = this.config.variant;
    await this.notify('chat/selectedModelChanged', {
      model,
      ...(chatId ? { chatId } : {}),
      ...(variant ? { variant } : {})
    });
  }

  async selectBehavior(behavior: string): Promise<void> {
    this.config = { ...this.config, behavior };
    this.store.changed();
    const chatId = this.store.current?.known ? this.store.current.id : undefined;
    await this.notify('chat/selectedBehaviorChanged', chatId ? { behavior, chatId } : { behavior });
  }

  /** The trust mode a chat runs in (the current one by default): its own, else the session's, else off. */
  trustOf(chat: ChatView | null | undefined = this.store.current): boolean {
    return chat?.trust ?? this.config.trust ?? false;
  }

  /**
   * The panel's Trust toggle: the current chat's trust mode. A chat the server knows gets `chat/update` (applies at
   * once, to a running prompt too; the server answers with a chat-scoped `config/updated`); a new chat sends it with
   * its first `chat/prompt`.
   */
  async setTrust(trust: boolean): Promise<void> {
    const chat = this.store.current ?? this.newChat();
    chat.trust = trust;
    chat.version += 1;
    this.store.changed();
    if (chat.known) {
      await this.call('chat/update', { chatId: chat.id, trust });
    }
  }

  async queryContext(query: string, contexts: ChatContext[] = []): Promise<ChatContext[]> {
    const chatId = this.store.current?.known ? this.store.current.id : undefined;
    const result = await this.call(
      'chat/queryContext',
      chatId ? { query, contexts, chatId } : { query, contexts },
      { timeoutMs: 10000 }
    );
    return Array.isArray(result?.contexts) ? result.contexts : [];
  }

  async queryCommands(query: string): Promise<ChatCommand[]> {
    const chatId = this.store.current?.known ? this.store.current.id : undefined;
    const result = await this.call('chat/queryCommands', chatId ? { query, chatId } : { query }, {
      timeoutMs: 10000
    });
    return Array.isArray(result?.commands) ? result.commands : [];
  }

  // -- inline completion and rewrite ---------------------------------------------------------------------------

  /**
   * `completion/inline`. Aborting `signal` rejects at once (REQUEST_CANCELLED) and sends `$/cancelRequest`, so the
   * server stops the model call; a failed suggestion is a result with `error`, not a rejection.
   */
  completeInline(params: CompletionInlineParams, signal?: AbortSignal): Promise<CompletionInlineResult> {
    return this.call('completion/inline', params, { signal, timeoutMs: 60000 });
  }

  /**
   * `rewrite/prompt`. `onContent` gets every `rewrite/contentReceived` of this rewrite up to its `finished`; it is
   * registered before the request goes out, so the contents the server streams right after its answer are never
   * missed. A lost connection ends the rewrite with an `error` and `finished`.
   */
  async rewrite(params: RewritePromptParams, onContent: (content: RewriteContent) => void): Promise<RewritePromptResult> {
    this._rewrites.set(params.id, onContent);
    try {
      return await this.call('rewrite/prompt', params, { timeoutMs: 30000 });
    } catch (error) {
      this._rewrites.delete(params.id);
      throw error;
    }
  }

  /** `rewrite/stop`: the server ends the rewrite with `finished` (what streamed so far is the result). */
  stopRewrite(id: string): Promise<void> {
    return this.notify('rewrite/stop', { id });
  }

  private _endRewrites(message: string): void {
    const listeners = [...this._rewrites.values()];
    this._rewrites.clear();
    for (const listener of listeners) {
      listener({ type: 'error', message });
      listener({ type: 'finished', totalTimeMs: 0 });
    }
  }
}

export { RpcError };
