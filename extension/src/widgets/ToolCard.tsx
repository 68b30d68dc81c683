/**
 * One tool call: what the model wants to run, the diff of a file change, and — while it waits for the user —
 * Approve / Approve for session / Reject. Then its state (running, done, failed, rejected) and output, and Undo on a
 * finished call the server can revert (`details.undoable`), until it is undone.
 */

import { PageConfig } from '@jupyterlab/coreutils';
import * as React from 'react';

import { subagentDetails, type ChatView, type ToolItem, type ToolState } from '../model';
import { DiffView } from './DiffView';
import { HunkList } from './HunkList';

const STATE_LABEL: Record<ToolState, string> = {
  preparing: 'preparing…',
  waiting: 'waiting for approval',
  approved: 'approved',
  running: 'running…',
  done: 'done',
  failed: 'failed',
  rejected: 'rejected'
};

/** Approve a waiting call; `hunks`: only those hunks of its file change (absent: all of it); `chatId`: the chat of
 * the call when it is not the one shown (a subagent's call, nested in its parent's card). */
export type ApproveHandler = (id: string, save?: 'session', hunks?: string[], chatId?: string) => void;

export interface ToolCardProps {
  item: ToolItem;
  version: number;
  onApprove: ApproveHandler;
  onReject: (id: string, chatId?: string) => void;
  /** `chat/toolCallUndo`; the promise settles when the server answered (the card then shows "undone" or stays). */
  onUndo: (id: string, chatId?: string) => Promise<unknown> | void;
}

/** The `spawn_agent` label: the activity the model gave the subagent, else the card's summary. */
function subagentActivity(item: ToolItem): string {
  const activity = item.arguments?.activity;
  return typeof activity === 'string' && activity ? activity : item.summary || 'Working on a task';
}

/**
 * A subagent's progress inside its parent's `spawn_agent` card: its texts and its tool calls as nested cards (with
 * their own approve buttons, answered in the subagent's chat), collapsible; open while the subagent works.
 */
function SubagentView(props: ToolCardProps & { child: ChatView | undefined }): JSX.Element {
  const { item, child } = props;
  const details = subagentDetails(item)!;
  const working = item.state === 'running' || item.state === 'approved' || item.state === 'preparing';
  const [open, setOpen] = React.useState(true);
  const childId = child?.id ?? details.subagentChatId;
  const { onApprove: approveIn, onReject: rejectIn, onUndo: undoIn } = props;
  const onApprove: ApproveHandler = React.useCallback(
    (id, save, hunks) => approveIn(id, save, hunks, childId),
    [approveIn, childId]
  );
  const onReject = React.useCallback((id: string) => rejectIn(id, childId), [rejectIn, childId]);
  const onUndo = React.useCallback((id: string) => undoIn(id, childId), [undoIn, childId]);
  const items = child?.items ?? [];
  return (
    <div className="eca-Subagent" data-subagent-chat-id={childId}>
      <div className="eca-Subagent-header">
        <span className="eca-Subagent-agent">{details.agentName}</span>
        <span className="eca-Subagent-activity">{subagentActivity(item)}</span>
        <span className="eca-Subagent-step">
          step {details.step}
          {details.maxSteps ? `/${details.maxSteps}` : ''}
        </span>
        {working && child?.progress && <span className="eca-Subagent-progress">{child.progress}</span>}
      </div>
      <details
        className="eca-Subagent-body"
        open={open}
        onToggle={e => setOpen((e.currentTarget as HTMLDetailsElement).open)}
      >
        <summary>{open ? 'Hide the subagent’s steps' : `Show the subagent’s steps (${items.length})`}</summary>
        {items.map(child =>
          child.kind === 'tool' ? (
            <ToolCard
              key={child.key}
              item={child}
              version={child.version}
              onApprove={onApprove}
              onReject={onReject}
              onUndo={onUndo}
            />
          ) : child.kind === 'assistant' || child.kind === 'system' || child.kind === 'user' ? (
            <div key={child.key} className={`eca-Subagent-text eca-mod-${child.kind}`}>
              {child.text}
            </div>
          ) : null
        )}
      </details>
    </div>
  );
}

/** The diff's title: a notebook cell change names the notebook and the cell. */
/** The path as the user knows it in JupyterLab: relative to the server's root when it is inside it. */
function shownPath(path: string): string {
  const root = (PageConfig.getOption('serverRoot') || '').replace(/\/+$/, '');
  return root && path.startsWith(root + '/') ? path.slice(root.length + 1) : path;
}

function diffTitle(path: string, cellId: string | undefined): string {
  const shown = shownPath(path);
  return cellId ? `${shown} · cell ${cellId}` : shown;
}

function prettyArguments(item: ToolItem): string {
  if (item.arguments) {
    return JSON.stringify(item.arguments, null, 2);
  }
  try {
    return JSON.stringify(JSON.parse(item.argumentsText), null, 2);
  } catch {
    return item.argumentsText;
  }
}

export function ToolCard(props: ToolCardProps): JSX.Element {
  const { item, onUndo } = props;
  const [undoing, setUndoing] = React.useState(false);
  const output = (item.outputs ?? []).map(o => o.text ?? (o as any).content ?? '').join('\n');
  const fileChange = item.details && item.details.type === 'fileChange' ? item.details : undefined;
  const retrieval = item.details && item.details.type === 'retrieval' ? item.details : undefined;
  const subagent = subagentDetails(item);
  const canUndo = item.state === 'done' && Boolean(fileChange?.undoable) && !item.undone;
  const hunks = React.useMemo(() => fileChange?.hunks ?? [], [fileChange]);
  const waiting = item.state === 'waiting';
  // hunk by hunk: while waiting on a change of two or more hunks, or when some were left out
  const byHunk = hunks.length > 1 && (waiting || hunks.some(h => h.applied === false));
  const [chosen, setChosen] = React.useState<ReadonlySet<string> | undefined>(undefined);
  const ticked = chosen ?? new Set(hunks.map(h => h.id));
  const toggle = React.useCallback(
    (id: string, on: boolean) => {
      const next = new Set(chosen ?? hunks.map(h => h.id));
      if (on) {
        next.add(id);
      } else {
        next.delete(id);
      }
      setChosen(next);
    },
    [chosen, hunks]
  );
  // all ticked: a plain approval (every client's meaning); some: only those; none: nothing to apply
  const partial = byHunk && ticked.size < hunks.length ? hunks.filter(h => ticked.has(h.id)).map(h => h.id) : undefined;
  const approve = (save?: 'session') => {
    if (partial && partial.length === 0) {
      props.onReject(item.id);
    } else {
      props.onApprove(item.id, save, partial);
    }
  };
  const undo = React.useCallback(() => {
    setUndoing(true);
    // A failure is reported by the panel (onError); here the button only comes back.
    const done = () => setUndoing(false);
    Promise.resolve(onUndo(item.id)).then(done, done);
  }, [onUndo, item.id]);
  return (
    <div
      className={`eca-ToolCard eca-mod-${item.state}${item.undone ? ' eca-mod-undone' : ''}`}
      data-tool-call-id={item.id}
      data-tool-state={item.state}
    >
      <div className="eca-ToolCard-header">
        <span className="eca-ToolCard-name" title={`${item.server}__${item.name}`}>
          {item.summary || item.name}
        </span>
        <span className="eca-ToolCard-state">
          {item.undone ? 'undone' : STATE_LABEL[item.state]}
          {item.totalTimeMs !== undefined && (item.state === 'done' || item.state === 'failed')
            ? ` · ${(item.totalTimeMs / 1000).toFixed(1)} s`
            : ''}
        </span>
      </div>
      {item.risk && (
        <div className="eca-ToolCard-riskLine">
          <span
            className="eca-ToolCard-risk"
            data-risk={item.risk.level}
            title={`${item.risk.level} risk: ${item.risk.reason}`}
          >
            {item.risk.level} risk
          </span>
          {waiting && (
            // while the user decides, the reason is spelled out, not only in the badge's tooltip
            <span className="eca-ToolCard-riskReason" data-risk={item.risk.level}>
              {item.risk.reason}
            </span>
          )}
        </div>
      )}
      {fileChange?.rationale && (
        // the model's own "why", asked with the change (write tools' rationale / acceptance_criteria)
        <div className="eca-ToolCard-rationale">
          {fileChange.rationale}
          {(fileChange.acceptanceCriteria ?? []).length > 0 && (
            <ul className="eca-ToolCard-criteria" aria-label="How to verify">
              {(fileChange.acceptanceCriteria ?? []).map((c, i) => (
                <li key={i}>{c}</li>
              ))}
            </ul>
          )}
        </div>
      )}
      {subagent && <SubagentView {...props} child={item.subagent} />}
      {retrieval?.message && item.state === 'done' && (
        <div className="eca-ToolCard-found">{retrieval.message}</div>
      )}
      {fileChange && byHunk && (
        <HunkList
          hunks={hunks}
          path={diffTitle(fileChange.path, fileChange.cellId)}
          chosen={waiting ? ticked : undefined}
          onToggle={waiting ? toggle : undefined}
        />
      )}
      {fileChange && !byHunk && (
        <DiffView
          diff={fileChange.diff}
          path={diffTitle(fileChange.path, fileChange.cellId)}
          linesAdded={fileChange.linesAdded}
          linesRemoved={fileChange.linesRemoved}
        />
      )}
      {canUndo && (
        <div className="eca-ToolCard-actions">
          <button
            className="jp-mod-styled eca-undo"
            title="Revert what this tool call changed"
            disabled={undoing}
            onClick={undo}
          >
            {undoing ? 'Undoing…' : 'Undo'}
          </button>
        </div>
      )}
      {item.state === 'waiting' && (
        <div className="eca-ToolCard-actions">
          <button className="jp-mod-styled jp-mod-accept eca-approve" onClick={() => approve()}>
            {partial === undefined
              ? 'Approve'
              : partial.length === 0
                ? 'Approve (no hunk selected: rejects)'
                : `Approve ${partial.length} of ${hunks.length} hunks`}
          </button>
          <button
            className="jp-mod-styled eca-approve-session"
            title="Approve, and don't ask again for this tool in this session"
            onClick={() => approve('session')}
          >
            Approve for session
          </button>
          <button className="jp-mod-styled jp-mod-reject eca-reject" onClick={() => props.onReject(item.id)}>
            Reject
          </button>
        </div>
      )}
      <details className="eca-ToolCard-arguments">
        <summary>Arguments</summary>
        <pre>{prettyArguments(item)}</pre>
      </details>
      {item.state === 'rejected' && (
        <div className="eca-ToolCard-reason">
          {item.reason === 'user-config'
            ? 'Rejected by a configured rule.'
            : item.reason === 'hook-rejected'
              ? 'Rejected by a hook (its reason is in the chat).'
              : 'Rejected by the user.'}
        </div>
      )}
      {output && (
        <details className="eca-ToolCard-output" open={item.state === 'failed'}>
          <summary>Output</summary>
          <pre>{output}</pre>
        </details>
      )}
    </div>
  );
}
