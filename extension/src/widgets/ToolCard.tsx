/**
 * One tool call: what the model wants to run, the diff of a file change, and — while it waits for the user —
 * Approve / Approve for session / Reject. Then its state (running, done, failed, rejected) and output.
 */

import * as React from 'react';

import type { ToolItem, ToolState } from '../model';
import { DiffView } from './DiffView';

const STATE_LABEL: Record<ToolState, string> = {
  preparing: 'preparing…',
  waiting: 'waiting for approval',
  approved: 'approved',
  running: 'running…',
  done: 'done',
  failed: 'failed',
  rejected: 'rejected'
};

export interface ToolCardProps {
  item: ToolItem;
  version: number;
  onApprove: (id: string, save?: 'session') => void;
  onReject: (id: string) => void;
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
  const { item } = props;
  const output = (item.outputs ?? []).map(o => o.text ?? (o as any).content ?? '').join('\n');
  const fileChange = item.details && item.details.type === 'fileChange' ? item.details : undefined;
  return (
    <div className={`eca-ToolCard eca-mod-${item.state}`} data-tool-call-id={item.id} data-tool-state={item.state}>
      <div className="eca-ToolCard-header">
        <span className="eca-ToolCard-name" title={`${item.server}__${item.name}`}>
          {item.summary || item.name}
        </span>
        <span className="eca-ToolCard-state">
          {STATE_LABEL[item.state]}
          {item.totalTimeMs !== undefined && (item.state === 'done' || item.state === 'failed')
            ? ` · ${(item.totalTimeMs / 1000).toFixed(1)} s`
            : ''}
        </span>
      </div>
      {fileChange && (
        <DiffView
          diff={fileChange.diff}
          path={fileChange.path}
          linesAdded={fileChange.linesAdded}
          linesRemoved={fileChange.linesRemoved}
        />
      )}
      {item.state === 'waiting' && (
        <div className="eca-ToolCard-actions">
          <button className="jp-mod-styled jp-mod-accept eca-approve" onClick={() => props.onApprove(item.id)}>
            Approve
          </button>
          <button
            className="jp-mod-styled eca-approve-session"
            title="Approve, and don't ask again for this tool in this session"
            onClick={() => props.onApprove(item.id, 'session')}
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
          {item.reason === 'user-config' ? 'Rejected by a configured rule.' : 'Rejected by the user.'}
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
