/**
 * The chat header: the current chat's title, New, Delete, and a collapsible list of the workspace's chats
 * (every tab and every saved chat of this workspace, newest first) to switch between them.
 */

import * as React from 'react';

import type { ChatView } from '../model';

export interface ChatListProps {
  chats: ChatView[];
  current: ChatView | null;
  open: boolean;
  onToggle: () => void;
  onSelect: (id: string) => void;
  onNew: () => void;
  onDelete: (id: string) => void;
  /** Opens the "Connect a model" view (the gear in the header). */
  onConnectModel?: () => void;
}

function when(ms: number | undefined): string {
  if (!ms) {
    return '';
  }
  const seconds = Math.max(0, (Date.now() - ms) / 1000);
  if (seconds < 60) {
    return 'just now';
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  return new Date(ms).toLocaleDateString();
}

export function ChatList(props: ChatListProps): JSX.Element {
  const { current } = props;
  return (
    <div className="eca-ChatHeader">
      <div className="eca-ChatHeader-bar">
        <button
          className="eca-ChatHeader-toggle"
          aria-expanded={props.open}
          title="Chats"
          onClick={props.onToggle}
        >
          {props.open ? '▾' : '▸'}
        </button>
        <span className="eca-ChatHeader-title" title={current?.title}>
          {current?.title || 'New chat'}
        </span>
        {props.onConnectModel && (
          <button
            className="jp-mod-styled eca-connect-model"
            title="Connect a model (OpenAI, Anthropic, OpenAI-compatible, Ollama)"
            aria-label="Connect a model"
            onClick={props.onConnectModel}
          >
            ⚙
          </button>
        )}
        <button className="jp-mod-styled eca-new-chat" title="New chat" onClick={props.onNew}>
          + New
        </button>
        {current && current.known && (
          <button
            className="jp-mod-styled eca-delete-chat"
            title="Delete this chat"
            onClick={() => props.onDelete(current.id)}
          >
            Delete
          </button>
        )}
      </div>
      {props.open && (
        <ul className="eca-ChatList">
          {props.chats.length === 0 && <li className="eca-ChatList-empty">No chats yet.</li>}
          {props.chats.map(chat => (
            <li
              key={chat.id}
              className={chat.id === current?.id ? 'eca-ChatList-item eca-mod-current' : 'eca-ChatList-item'}
              data-chat-id={chat.id}
              onClick={() => props.onSelect(chat.id)}
            >
              <span className={`eca-ChatList-status eca-mod-${chat.status}`} aria-label={chat.status} />
              <span className="eca-ChatList-title">{chat.title || 'Untitled chat'}</span>
              <span className="eca-ChatList-time">{when(chat.updatedAt ?? chat.createdAt)}</span>
              <button
                className="eca-ChatList-delete"
                aria-label={`Delete ${chat.title || 'chat'}`}
                title="Delete"
                onClick={event => {
                  event.stopPropagation();
                  props.onDelete(chat.id);
                }}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
