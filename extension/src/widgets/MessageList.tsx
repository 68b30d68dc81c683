/**
 * The messages of one chat. Each item is memoized on its `version`, so while a reply streams only the growing
 * message re-renders; the list itself re-renders once per flushed frame (see `ChatStore`). The view sticks to the
 * bottom while the user is there and stays put when they scrolled up to read.
 */

import * as React from 'react';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import type { ChatView, Item } from '../model';
import { renderStats } from '../stats';
import { ChatImage } from './ChatImage';
import { Markdown } from './Markdown';
import { ToolCard, type ApproveHandler } from './ToolCard';
import { UserMessage } from './UserMessage';

/**
 * Words of the engine's once-per-chat notice on the embedded model (`DEMO_NOTICE_MARK` in
 * eca_notebook/engine/turn/_small_model.py): the system text that has them gets a "Connect a model" button.
 */
export const DEMO_NOTICE_MARK = 'small offline demo model';

interface ItemProps {
  item: Item;
  version: number;
  streaming: boolean;
  rendermime: IRenderMimeRegistry | null;
  onApprove: ApproveHandler;
  onReject: (id: string, chatId?: string) => void;
  onUndo: (id: string, chatId?: string) => Promise<unknown> | void;
  /** The chat is running a prompt (user messages offer no rewind then). */
  busy: boolean;
  onRewind?: (contentId: string, revertFiles: boolean) => Promise<unknown> | void;
  onFork?: (contentId: string) => Promise<unknown> | void;
  /** Opens the provider setup: the demo-model notice's button (absent: no button). */
  onConnectModel?: () => void;
}

function ItemViewImpl(props: ItemProps): JSX.Element {
  renderStats.items += 1;
  const { item } = props;
  switch (item.kind) {
    case 'user':
      return <UserMessage item={item} busy={props.busy} onRewind={props.onRewind} onFork={props.onFork} />;
    case 'system':
      return (
        <div className="eca-Message eca-mod-system">
          <div className="eca-Message-body eca-Message-plain">{item.text}</div>
          {props.onConnectModel && item.text.includes(DEMO_NOTICE_MARK) && (
            <button className="jp-mod-styled jp-mod-accept eca-ConnectModelButton" onClick={props.onConnectModel}>
              Connect a model
            </button>
          )}
        </div>
      );
    case 'assistant':
      return (
        <div className="eca-Message eca-mod-assistant">
          <Markdown text={item.text} streaming={props.streaming} rendermime={props.rendermime} />
        </div>
      );
    case 'reasoning':
      return (
        <details className="eca-Reasoning" data-done={item.done}>
          <summary>
            {item.done
              ? `Thought for ${((item.totalTimeMs ?? 0) / 1000).toFixed(1)} s`
              : 'Thinking…'}
          </summary>
          <div className="eca-Reasoning-text">{item.text}</div>
        </details>
      );
    case 'tool':
      return (
        <ToolCard
          item={item}
          version={props.version}
          onApprove={props.onApprove}
          onReject={props.onReject}
          onUndo={props.onUndo}
        />
      );
    case 'image':
      return <ChatImage item={item} />;
    case 'url':
      return (
        <div className="eca-Message eca-mod-url">
          <a href={item.url} target="_blank" rel="noopener noreferrer">
            {item.title || item.url}
          </a>
        </div>
      );
  }
}

const ItemView = React.memo(
  ItemViewImpl,
  (a, b) =>
    a.item === b.item &&
    a.version === b.version &&
    a.streaming === b.streaming &&
    a.rendermime === b.rendermime &&
    a.onApprove === b.onApprove &&
    a.onReject === b.onReject &&
    a.onUndo === b.onUndo &&
    a.busy === b.busy &&
    a.onRewind === b.onRewind &&
    a.onFork === b.onFork &&
    a.onConnectModel === b.onConnectModel
);

export interface MessageListProps {
  chat: ChatView;
  version: number;
  rendermime: IRenderMimeRegistry | null;
  welcome?: string;
  onApprove: ApproveHandler;
  onReject: (id: string, chatId?: string) => void;
  onUndo: (id: string, chatId?: string) => Promise<unknown> | void;
  /** "Rewind to here" on user messages (`chat/rollback`); absent: not offered. */
  onRewind?: (contentId: string, revertFiles: boolean) => Promise<unknown> | void;
  /** "Fork from here" on user messages (`chat/fork`); absent: not offered. */
  onFork?: (contentId: string) => Promise<unknown> | void;
  /** Opens the provider setup ("Connect a model" on the demo-model notice); absent: no button. */
  onConnectModel?: () => void;
}

function MessageListImpl(props: MessageListProps): JSX.Element {
  renderStats.list += 1;
  const { chat } = props;
  const scroller = React.useRef<HTMLDivElement>(null);
  const stick = React.useRef(true);

  const onScroll = React.useCallback(() => {
    const el = scroller.current;
    if (el) {
      stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 48;
    }
  }, []);

  React.useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) {
      el.scrollTop = el.scrollHeight;
    }
  });

  React.useEffect(() => {
    stick.current = true; // switching chats starts at the bottom
  }, [chat.id]);

  // The list also changes size without rendering: the composer below grows or shrinks when a turn ends (the context
  // meter appears, Steer/Stop go), and rendered Markdown settles after the render. A list that was following the
  // answer keeps its end in view then too — the walk found the repetition guard's note clipped by 22 px.
  React.useEffect(() => {
    const el = scroller.current;
    if (!el || typeof ResizeObserver === 'undefined') {
      return;
    }
    const follow = (): void => {
      if (stick.current) {
        el.scrollTop = el.scrollHeight;
      }
    };
    const resized = new ResizeObserver(follow);
    resized.observe(el);
    const changed = new MutationObserver(follow);
    changed.observe(el, { childList: true, subtree: true, characterData: true });
    return () => {
      resized.disconnect();
      changed.disconnect();
    };
  }, []);

  const running = chat.status !== 'idle';
  const last = chat.items[chat.items.length - 1];
  return (
    <div className="eca-MessageList" ref={scroller} onScroll={onScroll} data-chat-id={chat.id}>
      {chat.items.length === 0 && (
        <div className="eca-Welcome">{props.welcome || 'Ask anything about your workspace.'}</div>
      )}
      {chat.items.map(item => (
        <ItemView
          key={item.key}
          item={item}
          version={item.version}
          streaming={running && item === last}
          rendermime={props.rendermime}
          onApprove={props.onApprove}
          onReject={props.onReject}
          onUndo={props.onUndo}
          busy={running}
          onRewind={props.onRewind}
          onFork={props.onFork}
          onConnectModel={props.onConnectModel}
        />
      ))}
      {chat.progress && (
        <div className="eca-Progress">
          <span className="eca-Spinner" aria-hidden="true" />
          {chat.progress}
        </div>
      )}
    </div>
  );
}

export const MessageList = React.memo(
  MessageListImpl,
  (a, b) =>
    a.chat === b.chat &&
    a.version === b.version &&
    a.rendermime === b.rendermime &&
    a.welcome === b.welcome &&
    a.onApprove === b.onApprove &&
    a.onReject === b.onReject &&
    a.onUndo === b.onUndo &&
    a.onRewind === b.onRewind &&
    a.onFork === b.onFork &&
    a.onConnectModel === b.onConnectModel
);
