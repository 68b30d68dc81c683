/**
 * A user message, with the two ways back to it: "Rewind to here" (`chat/rollback`: the message and everything after
 * it are removed, and — unless the user unticks it — the file changes made since are reverted) and "Fork from here"
 * (`chat/fork`: a new chat holding the chat up to this message and its answer, opened in the panel).
 *
 * Rewinding destroys history, so it asks first, inline under the message (no modal: the user sees which message
 * they are going back to). It is offered only on messages the server gave a `contentId` (chats saved before ids
 * existed have none) and not while the chat runs a prompt (the server refuses that: stop first). The server answers
 * a rewind with `chat/cleared` and the kept messages again, so this message disappears with the rest.
 */

import * as React from 'react';

import type { TextItem } from '../model';

export interface UserMessageProps {
  item: TextItem;
  /** The chat is running a prompt: rewinding is refused until it is idle. */
  busy: boolean;
  /** `chat/rollback` from this message; settles when the server answered. */
  onRewind?: (contentId: string, revertFiles: boolean) => Promise<unknown> | void;
  /** `chat/fork` at this message; settles when the new chat is open. */
  onFork?: (contentId: string) => Promise<unknown> | void;
}

export function UserMessage(props: UserMessageProps): JSX.Element {
  const { item, busy, onRewind, onFork } = props;
  const [confirming, setConfirming] = React.useState(false);
  const [revertFiles, setRevertFiles] = React.useState(true);
  const [pending, setPending] = React.useState(false);
  const contentId = item.contentId;

  const settle = React.useCallback((action: Promise<unknown> | void) => {
    setPending(true);
    const done = () => setPending(false);
    Promise.resolve(action).then(done, done);
  }, []);
  const rewind = React.useCallback(() => {
    if (contentId && onRewind) {
      setConfirming(false);
      settle(onRewind(contentId, revertFiles));
    }
  }, [contentId, onRewind, revertFiles, settle]);
  const fork = React.useCallback(() => {
    if (contentId && onFork) {
      settle(onFork(contentId));
    }
  }, [contentId, onFork, settle]);

  return (
    <div className="eca-Message eca-mod-user" data-content-id={contentId}>
      <div className="eca-Message-body eca-Message-plain">{item.text}</div>
      {contentId && (onRewind || onFork) && (
        <div className="eca-Message-actions">
          {onRewind && (
            <button
              className="eca-Message-action eca-rewind"
              title={busy ? 'Stop the running prompt to rewind' : 'Remove this message and everything after it'}
              disabled={busy || pending}
              onClick={() => setConfirming(true)}
            >
              Rewind to here
            </button>
          )}
          {onFork && (
            <button
              className="eca-Message-action eca-fork"
              title="Copy the chat up to this message and its answer into a new chat"
              disabled={pending}
              onClick={fork}
            >
              Fork from here
            </button>
          )}
        </div>
      )}
      {confirming && !busy && (
        <div className="eca-RewindConfirm" role="group" aria-label="Rewind the chat">
          <div>Remove this message and everything after it from the chat?</div>
          <label>
            <input
              type="checkbox"
              className="eca-rewind-files"
              checked={revertFiles}
              onChange={event => setRevertFiles(event.currentTarget.checked)}
            />
            Also revert the file changes made since
          </label>
          <div className="eca-RewindConfirm-buttons">
            <button className="jp-mod-styled jp-mod-warn eca-rewind-confirm" onClick={rewind}>
              Rewind
            </button>
            <button className="jp-mod-styled eca-rewind-cancel" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        </div>
      )}
    </div>
  );
}
