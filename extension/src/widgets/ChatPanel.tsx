/**
 * The side panel: a Lumino widget hosting the React chat app. It reads everything from the client's store
 * (one subscription, notified at most once per frame) and calls the client for every action.
 */

import * as React from 'react';
import { ReactWidget } from '@jupyterlab/apputils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import type { EcaClient } from '../client';
import type { EditorContextSource } from '../editorContext';
import { noEditorContext } from '../editorContext';
import { renderStats } from '../stats';
import type { ConnectModelView, IProvidersApi } from '../providersApi';
import { ChatList } from './ChatList';
import { ConnectModel } from './ConnectModel';
import { Composer } from './Composer';
import { JobsStrip } from './JobsStrip';
import { MessageList } from './MessageList';
import { CustomTools } from './CustomTools';
import { McpServers } from './McpServers';
import { PlanView } from './PlanView';
import { QuestionCard } from './QuestionCard';
import { Pickers, TrustToggle, Usage } from './Pickers';

export interface ChatAppProps {
  client: EcaClient;
  rendermime: IRenderMimeRegistry | null;
  editors: EditorContextSource;
  onError: (error: unknown) => void;
  /** The "Connect a model" view: whether it shows (the header's gear, the command) and its REST API. */
  connectView?: ConnectModelView;
  providers?: IProvidersApi;
}

const CONNECTION_LABEL: Record<string, string> = {
  idle: 'Not connected',
  connecting: 'Connecting…',
  handshaking: 'Connecting…',
  reconnecting: 'Connection lost: reconnecting…',
  disposed: 'Disconnected'
};

export function ChatApp(props: ChatAppProps): JSX.Element {
  const { client } = props;
  const store = client.store;
  React.useSyncExternalStore(
    React.useCallback(listener => store.subscribe(listener), [store]),
    () => store.version
  );
  renderStats.panel += 1;
  const [listOpen, setListOpen] = React.useState(false);
  const connectView = props.connectView;
  const connectOpen = React.useSyncExternalStore(
    React.useCallback(listener => (connectView ? connectView.subscribe(listener) : () => undefined), [connectView]),
    () => Boolean(connectView?.isOpen)
  );

  const chat = store.current;
  const connection = client.connection;
  const connected = connection === 'open';
  const running = Boolean(chat && chat.status !== 'idle');
  React.useEffect(() => {
    if (running && connectView?.isOpen) {
      connectView.close(); // a turn started (from any door): show its answer
    }
  }, [running, connectView]);
  const question = chat ? client.questions.get(chat.id) : undefined;

  const guard = React.useCallback(
    (action: Promise<unknown>) => {
      action.catch(props.onError);
    },
    [props.onError]
  );
  // (`chatId`: a subagent's call, nested in this chat's spawn_agent card, is answered in the subagent's chat)
  const onApprove = React.useCallback(
    (id: string, save?: 'session', hunks?: string[], chatId?: string) =>
      chat && guard(client.approve(chatId ?? chat.id, id, save, hunks)),
    [client, chat, guard]
  );
  const onReject = React.useCallback(
    (id: string, chatId?: string) => chat && guard(client.reject(chatId ?? chat.id, id)),
    [client, chat, guard]
  );
  const onUndo = React.useCallback(
    (id: string, chatId?: string) => {
      if (chat) {
        const action = client.undoToolCall(chatId ?? chat.id, id);
        guard(action);
        return action;
      }
    },
    [client, chat, guard]
  );

  const onRewind = React.useCallback(
    (contentId: string, revertFiles: boolean) => {
      if (chat) {
        const action = client.rewind(chat.id, contentId, revertFiles);
        guard(action);
        return action;
      }
    },
    [client, chat, guard]
  );
  // the demo-model notice's button: the view the command eca-notebook:connect-model opens
  const canConnect = Boolean(connectView && props.providers);
  const onConnectModel = React.useMemo(
    () => (canConnect && connectView ? () => connectView.open() : undefined),
    [canConnect, connectView]
  );
  const onFork = React.useCallback(
    (contentId: string) => {
      if (chat) {
        const action = client.fork(chat.id, contentId);
        guard(action);
        return action;
      }
    },
    [client, chat, guard]
  );

  return (
    <div className="eca-ChatApp" data-connection={connection}>
      <ChatList
        chats={store.list()}
        current={chat}
        open={listOpen}
        onToggle={() => setListOpen(open => !open)}
        onSelect={id => {
          setListOpen(false);
          guard(client.selectChat(id));
        }}
        onNew={() => {
          setListOpen(false);
          client.newChat();
        }}
        onDelete={id => guard(client.deleteChat(id))}
        onConnectModel={connectView && props.providers ? () => connectView.open() : undefined}
      />
      {!connected && (
        <div className="eca-Banner" role="status">
          <span>{CONNECTION_LABEL[connection] ?? connection}</span>
          {connection === 'reconnecting' && (
            <button className="jp-mod-styled" onClick={() => client.transport.reconnectNow()}>
              Retry now
            </button>
          )}
        </div>
      )}
      {connected && client.serverProgress && (
        <div className="eca-Banner eca-mod-info" role="status">
          {client.serverProgress}…
        </div>
      )}
      {(connected || client.mcpServers.size > 0) && (
        <McpServers
          servers={[...client.mcpServers.values()]}
          onToggle={(name, running) => guard(client.setMcpServerRunning(name, running))}
          onAdd={draft => client.addMcpServer(draft)}
          onUpdate={(name, change) => client.updateMcpServer({ name, ...change })}
          onRemove={name => client.removeMcpServer(name)}
          onSetEnabled={(name, enabled) => guard(client.setMcpServerEnabled(name, enabled))}
        />
      )}
      {connected && <CustomTools tools={client.customTools} />}
      {connectOpen && connectView && props.providers ? (
        // in the chat's place while open: the composer stays, so the next question is one click away
        <ConnectModel api={props.providers} onClose={() => connectView.close()} />
      ) : chat ? (
        <MessageList
          chat={chat}
          version={chat.version}
          rendermime={props.rendermime}
          welcome={client.config.welcomeMessage}
          onApprove={onApprove}
          onReject={onReject}
          onUndo={onUndo}
          onRewind={onRewind}
          onFork={onFork}
          onConnectModel={onConnectModel}
        />
      ) : (
        <div className="eca-MessageList" />
      )}
      {chat?.plan && <PlanView key={chat.id} plan={chat.plan} version={chat.plan.version} />}
      {question && <QuestionCard key={question.params.toolCallId ?? question.params.question} question={question} />}
      <JobsStrip client={client} chat={chat} onError={props.onError} />
      <Composer
        client={client}
        editors={props.editors}
        running={running}
        connected={connected}
        onStop={() => guard(client.stop())}
        onError={props.onError}
        onSent={() => connectView?.close()}
        toolbar={
          <>
            <Pickers
              config={client.config}
              onModel={model => guard(client.selectModel(model))}
              onBehavior={behavior => guard(client.selectBehavior(behavior))}
              onVariant={variant => guard(client.selectVariant(variant))}
            />
            <TrustToggle trust={client.trustOf(chat)} onChange={trust => guard(client.setTrust(trust))} />
            <Usage usage={chat?.usage} />
          </>
        }
      />
    </div>
  );
}

export class ChatPanel extends ReactWidget {
  constructor(private readonly _props: Partial<ChatAppProps> & { client: EcaClient }) {
    super();
    this.addClass('eca-ChatPanel');
  }

  protected render(): JSX.Element {
    return (
      <ChatApp
        client={this._props.client}
        rendermime={this._props.rendermime ?? null}
        editors={this._props.editors ?? noEditorContext}
        onError={this._props.onError ?? (error => console.error('eca:', error))}
        connectView={this._props.connectView}
        providers={this._props.providers}
      />
    );
  }
}
