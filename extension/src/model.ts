/**
 * The panel's state: every chat this tab knows about, each folded from the stream of `chat/contentReceived`
 * notifications into display items (user/assistant/system texts, reasoning blocks, tool-call cards, links).
 *
 * Why mutable with version counters instead of immutable copies: a reply can be thousands of small chunks; copying
 * a chat per chunk is wasted work. Each item and chat carries a `version` that bumps on change, so React components
 * memoize on `(item, version)` and only the item that changed re-renders. Listeners are told once per animation
 * frame at most (`schedule`), however many chunks arrived in it — that is the coalescing that keeps the panel smooth.
 *
 * Pure TypeScript: no JupyterLab imports (unit-tested under node in `test/model.test.ts`).
 */

import type {
  ChatContent,
  ChatContext,
  ChatSummary,
  FileChangeDetails,
  PlanStep,
  RetrievalDetails,
  ShellCommandDetails,
  SubagentDetails,
  ToolCallOutput,
  ToolCallRisk,
  UsageContent
} from './protocol';

export type Role = 'user' | 'system' | 'assistant';

interface ItemBase {
  /** Stable React key within the chat. */
  key: string;
  version: number;
}

export interface TextItem extends ItemBase {
  kind: 'user' | 'assistant' | 'system';
  text: string;
  contentId?: string;
}

export interface ReasoningItem extends ItemBase {
  kind: 'reasoning';
  id: string;
  text: string;
  done: boolean;
  totalTimeMs?: number;
}

export type ToolState = 'preparing' | 'waiting' | 'approved' | 'running' | 'done' | 'failed' | 'rejected';

export interface ToolItem extends ItemBase {
  kind: 'tool';
  id: string;
  name: string;
  server: string;
  origin: string;
  argumentsText: string;
  arguments?: Record<string, unknown>;
  summary?: string;
  details?: FileChangeDetails | RetrievalDetails | ShellCommandDetails | SubagentDetails;
  /** A `spawn_agent` call (`details.type === 'subagent'`): the subagent's chat, shown nested in this card. */
  subagent?: ChatView;
  /** The engine's risk level and reason (`low` / `medium` / `high`), on every content of the call after prepare. */
  risk?: ToolCallRisk;
  manualApproval: boolean;
  state: ToolState;
  outputs?: ToolCallOutput[];
  totalTimeMs?: number;
  reason?: string;
  /** `chat/toolCallUndo` reverted what this call changed (set by the client when the server says `undone`). */
  undone?: boolean;
}

export interface UrlItem extends ItemBase {
  kind: 'url';
  title: string;
  url: string;
}

/** An `image` chat content: a prompt's attached image (role user) or an MCP tool's picture (assistant). Drawn only
 * from a raster `data:` URL (`images.ts` `imageDataUrl`). */
export interface ImageItem extends ItemBase {
  kind: 'image';
  role: Role;
  mediaType: string;
  base64: string;
}

export type Item = TextItem | ReasoningItem | ToolItem | UrlItem | ImageItem;

export type ChatStatus = 'idle' | 'running' | 'stopping';

/** The agent's plan: the chat's latest `plan` content (each one replaces the one before); `version` bumps on each. */
export interface PlanState {
  steps: PlanStep[];
  explanation?: string;
  version: number;
}

/** A message the user sent while the chat was answering: it waits in the chat and goes out when the turn ends. */
export interface QueuedPrompt {
  id: string;
  message: string;
  contexts: ChatContext[];
}

export interface ChatView {
  id: string;
  title?: string;
  status: ChatStatus;
  items: Item[];
  /** The running progress text ("Generating", "Waiting for tool call approval"), absent when finished. */
  progress?: string;
  usage?: UsageContent;
  /** The plan the model published last (`update_plan`), shown as a checklist; absent until there is one. */
  plan?: PlanState;
  createdAt?: number;
  updatedAt?: number;
  model?: string;
  /** The chat's trust mode (tool calls that would ask run without asking), as the server's chat-scoped
   * `config/updated` `selectTrust` or the user's toggle set it; absent when neither did (the session default). */
  trust?: boolean;
  /** A subagent's chat (its contents carry `parentChatId`): shown inside the parent's `spawn_agent` card, never
   * in the chat list. */
  parentChatId?: string;
  /** Messages sent while the chat was running (Enter during an answer), oldest first: shown as queued under the
   * chat, removable, and sent one at a time as each turn ends (`EcaClient.queuePrompt`). */
  queued: QueuedPrompt[];
  /** Steers sent while the chat runs (`chat/promptSteer`), not yet taken in by the server: shown as pending above the
   * box, removable; the server takes them all in at the next round boundary (its user content then shows them), and
   * those left when the turn ends are sent as a prompt (`EcaClient.steer`). */
  steering: QueuedPrompt[];
  /** The server knows this chat (it was listed, opened or prompted); a fresh "new chat" is not known yet. */
  known: boolean;
  /** Items hold the whole chat (created here, or replayed by `chat/open`); otherwise only what streamed by. */
  loaded: boolean;
  version: number;
  _tools: Map<string, ToolItem>;
  _reasons: Map<string, ReasoningItem>;
  _keys: number;
}

/** Schedules a flush; the default is one per animation frame (setTimeout outside a browser). */
export type Scheduler = (flush: () => void) => void;

const frameScheduler: Scheduler = flush => {
  if (typeof requestAnimationFrame === 'function') {
    requestAnimationFrame(() => flush());
  } else {
    setTimeout(flush, 16);
  }
};

export function newChat(id: string, fields: Partial<ChatView> = {}): ChatView {
  return {
    id,
    status: 'idle',
    items: [],
    queued: [],
    steering: [],
    known: false,
    loaded: true,
    version: 0,
    _tools: new Map(),
    _reasons: new Map(),
    _keys: 0,
    ...fields
  };
}

function nextKey(chat: ChatView, prefix: string): string {
  chat._keys += 1;
  return `${prefix}${chat._keys}`;
}

/** Drop a chat's items (before `chat/open` replays it). */
export function resetChat(chat: ChatView): void {
  chat.items = [];
  chat._tools.clear();
  chat._reasons.clear();
  chat.progress = undefined;
  chat.usage = undefined;
  chat.plan = undefined;
  chat.version += 1;
}

function toolItem(chat: ChatView, content: { id: string; name: string; server: string; origin: string }): ToolItem {
  let item = chat._tools.get(content.id);
  if (!item) {
    item = {
      kind: 'tool',
      key: nextKey(chat, 't'),
      version: 0,
      id: content.id,
      name: content.name,
      server: content.server,
      origin: content.origin,
      argumentsText: '',
      manualApproval: false,
      state: 'preparing'
    };
    chat._tools.set(content.id, item);
    chat.items.push(item);
  }
  return item;
}

/**
 * Fold one `chat/contentReceived` into the chat. Returns false for content that changes nothing visible (an unknown
 * type from a newer server is ignored, never an error).
 */
export function applyContent(chat: ChatView, role: Role, content: ChatContent): boolean {
  const last = chat.items[chat.items.length - 1];
  switch (content.type) {
    case 'text': {
      if (role === 'assistant' && last && last.kind === 'assistant') {
        last.text += content.text;
        last.version += 1;
      } else {
        const text = role === 'user' ? content.text.replace(/\n$/, '') : content.text;
        chat.items.push({ kind: role, key: nextKey(chat, 'm'), version: 0, text, contentId: content.contentId });
      }
      break;
    }
    case 'url':
      chat.items.push({ kind: 'url', key: nextKey(chat, 'u'), version: 0, title: content.title, url: content.url });
      break;
    case 'image':
      chat.items.push({
        kind: 'image',
        key: nextKey(chat, 'i'),
        version: 0,
        role,
        mediaType: content.mediaType,
        base64: content.base64
      });
      break;
    case 'progress':
      chat.progress = content.state === 'running' ? content.text || 'Working' : undefined;
      break;
    case 'usage':
      chat.usage = content;
      break;
    case 'metadata':
      chat.title = content.title;
      break;
    case 'plan':
      chat.plan = {
        steps: content.steps ?? [],
        explanation: content.explanation,
        version: (chat.plan?.version ?? 0) + 1
      };
      break;
    case 'reasonStarted': {
      const item: ReasoningItem = {
        kind: 'reasoning',
        key: nextKey(chat, 'r'),
        version: 0,
        id: content.id,
        text: '',
        done: false
      };
      chat._reasons.set(content.id, item);
      chat.items.push(item);
      break;
    }
    case 'reasonText': {
      let item = chat._reasons.get(content.id);
      if (!item) {
        applyContent(chat, role, { type: 'reasonStarted', id: content.id });
        item = chat._reasons.get(content.id)!;
      }
      item.text += content.text;
      item.version += 1;
      break;
    }
    case 'reasonFinished': {
      const item = chat._reasons.get(content.id);
      if (item) {
        item.done = true;
        item.totalTimeMs = content.totalTimeMs;
        item.version += 1;
      }
      break;
    }
    case 'toolCallPrepare': {
      const item = toolItem(chat, content);
      item.argumentsText += content.argumentsText ?? '';
      item.summary = content.summary ?? item.summary;
      item.details = content.details ?? item.details;
      item.version += 1;
      break;
    }
    case 'toolCallRun': {
      const item = toolItem(chat, content);
      item.arguments = content.arguments;
      item.manualApproval = content.manualApproval;
      item.summary = content.summary ?? item.summary;
      item.details = content.details ?? item.details;
      item.risk = content.risk ?? item.risk;
      if (item.state === 'preparing') {
        item.state = content.manualApproval ? 'waiting' : 'approved';
      }
      item.version += 1;
      break;
    }
    case 'toolCallRunning': {
      const item = toolItem(chat, content);
      item.arguments = content.arguments ?? item.arguments;
      item.summary = content.summary ?? item.summary;
      item.details = content.details ?? item.details;
      item.risk = content.risk ?? item.risk;
      item.state = 'running';
      item.version += 1;
      break;
    }
    case 'toolCalled': {
      const item = toolItem(chat, content);
      item.outputs = content.outputs;
      item.totalTimeMs = content.totalTimeMs;
      item.summary = content.summary ?? item.summary;
      item.details = content.details ?? item.details;
      item.risk = content.risk ?? item.risk;
      item.state = content.error ? 'failed' : 'done';
      item.version += 1;
      break;
    }
    case 'toolCallRejected': {
      const item = toolItem(chat, content);
      item.reason = content.reason;
      item.summary = content.summary ?? item.summary;
      item.details = content.details ?? item.details;
      item.risk = content.risk ?? item.risk;
      item.state = 'rejected';
      item.version += 1;
      break;
    }
    default:
      return false;
  }
  chat.version += 1;
  return true;
}

/** The reference reserves this chat id prefix for subagents' chats. */
export const SUBAGENT_CHAT_PREFIX = 'subagent-';

/** Whether a chat is a subagent's (nested in its parent's tool card, not a chat of its own in the list). */
export function isSubagentChat(chat: ChatView): boolean {
  return Boolean(chat.parentChatId) || chat.id.startsWith(SUBAGENT_CHAT_PREFIX);
}

/** A `spawn_agent` call's subagent details, when the call has them. */
export function subagentDetails(item: ToolItem): SubagentDetails | undefined {
  return item.details && item.details.type === 'subagent' ? item.details : undefined;
}

/** Approval buttons are shown for these cards (the user has not answered yet). */
export function awaitingApproval(chat: ChatView): ToolItem[] {
  return chat.items.filter((i): i is ToolItem => i.kind === 'tool' && i.state === 'waiting');
}

export interface StoreStats {
  /** Content notifications applied. */
  contents: number;
  /** Times listeners were told (≤ animation frames while streaming). */
  flushes: number;
}

/**
 * All chats of this tab plus the currently shown one. Listeners are notified at most once per scheduled flush.
 */
export class ChatStore {
  readonly chats = new Map<string, ChatView>();
  currentId: string | null = null;
  /** Bumps on every flush; React reads it through useSyncExternalStore. */
  version = 0;
  readonly stats: StoreStats = { contents: 0, flushes: 0 };
  private readonly _listeners = new Set<() => void>();
  private _scheduled = false;

  constructor(private readonly _schedule: Scheduler = frameScheduler) {}

  subscribe(listener: () => void): () => void {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  get current(): ChatView | null {
    return this.currentId ? (this.chats.get(this.currentId) ?? null) : null;
  }

  /** The chat with `id`, created (not known to the server, not loaded) when missing. */
  ensure(id: string, fields: Partial<ChatView> = {}): ChatView {
    let chat = this.chats.get(id);
    if (!chat) {
      chat = newChat(id, { loaded: false, known: true, ...fields });
      this.chats.set(id, chat);
    }
    return chat;
  }

  /** Chats for the list, newest first; a fresh "new chat" without messages is left out, and so are subagents'
   * chats (shown inside their parent's card). */
  list(): ChatView[] {
    return [...this.chats.values()]
      .filter(c => (c.known || c.items.length > 0) && !isSubagentChat(c))
      .sort((a, b) => (b.updatedAt ?? b.createdAt ?? 0) - (a.updatedAt ?? a.createdAt ?? 0));
  }

  setCurrent(id: string | null): void {
    if (this.currentId !== id) {
      this.currentId = id;
      this.changed();
    }
  }

  /** Fold one `chat/contentReceived`; `parentChatId` (a subagent's content) nests the chat in its parent's card. */
  applyContent(chatId: string, role: Role, content: ChatContent, parentChatId?: string): void {
    const chat = this.ensure(chatId);
    this.stats.contents += 1;
    chat.known = true;
    if (parentChatId) {
      chat.parentChatId = parentChatId;
    }
    if (applyContent(chat, role, content)) {
      chat.updatedAt = Date.now();
      if ('details' in content && content.details?.type === 'subagent') {
        this._linkSubagent(chat, chat._tools.get((content as { id: string }).id));
      }
      if (isSubagentChat(chat)) {
        this._touchParent(chat);
      }
      this.changed();
    }
  }

  /** A `spawn_agent` card learnt its subagent's chat id: the card holds that chat (created if nothing came yet). */
  private _linkSubagent(parent: ChatView, item: ToolItem | undefined): void {
    const id = item && subagentDetails(item)?.subagentChatId;
    if (!item || !id) {
      return;
    }
    const child = this.ensure(id, { loaded: true });
    child.parentChatId = parent.id;
    item.subagent = child;
  }

  /** A subagent's chat changed: its parent's card re-renders (it shows the child's progress). */
  private _touchParent(child: ChatView): void {
    const parent = child.parentChatId ? this.chats.get(child.parentChatId) : undefined;
    if (!parent) {
      return;
    }
    for (const item of parent._tools.values()) {
      if (subagentDetails(item)?.subagentChatId === child.id) {
        item.subagent = child;
        item.version += 1;
        parent.version += 1;
      }
    }
  }

  /** Merge `chat/list` summaries: titles, status and times; chats the server no longer has are dropped. */
  mergeSummaries(summaries: ChatSummary[]): void {
    const seen = new Set<string>();
    for (const summary of summaries) {
      seen.add(summary.id);
      const chat = this.ensure(summary.id);
      chat.known = true;
      chat.title = summary.title ?? chat.title;
      chat.createdAt = summary.createdAt ?? chat.createdAt;
      chat.updatedAt = summary.updatedAt ?? chat.updatedAt;
      chat.model = summary.model ?? chat.model;
      if (chat.status !== 'stopping') {
        chat.status = summary.status;
      }
      chat.version += 1;
    }
    for (const [id, chat] of this.chats) {
      // (a subagent's chat is never listed: it goes with its parent)
      if (chat.known && !seen.has(id) && id !== this.currentId && !isSubagentChat(chat)) {
        this.chats.delete(id);
      }
    }
    this.changed();
  }

  setStatus(chatId: string, status: ChatStatus): void {
    const chat = this.ensure(chatId);
    chat.known = true;
    chat.status = status;
    if (status === 'idle') {
      chat.progress = undefined;
    }
    chat.version += 1;
    if (isSubagentChat(chat)) {
      this._touchParent(chat);
    }
    this.changed();
  }

  remove(chatId: string): void {
    if (this.chats.delete(chatId)) {
      if (this.currentId === chatId) {
        this.currentId = null;
      }
      this.changed();
    }
  }

  /** Every chat except `keep` must be replayed again before it is shown (after a reconnect). */
  invalidate(): void {
    for (const chat of this.chats.values()) {
      if (chat.known) {
        chat.loaded = false;
      }
    }
  }

  /** Ask for a flush: listeners run once, at the next frame, however many changes happen before it. */
  changed(): void {
    if (this._scheduled) {
      return;
    }
    this._scheduled = true;
    this._schedule(() => this.flush());
  }

  /** Notify listeners now (tests call it directly). */
  flush(): void {
    this._scheduled = false;
    this.version += 1;
    this.stats.flushes += 1;
    for (const listener of [...this._listeners]) {
      listener();
    }
  }
}
