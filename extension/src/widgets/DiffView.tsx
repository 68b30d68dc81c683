/**
 * A unified diff (as sent in `details.diff` of file-changing tool calls), coloured line by line. Shown *before* the
 * user approves, so they know exactly what will be written.
 */

import * as React from 'react';

import { diffKind } from '../diffKind';

export interface DiffViewProps {
  diff: string;
  path?: string;
  linesAdded?: number;
  linesRemoved?: number;
}

/** The class of one diff line (file header, hunk header, added, removed, context). */
export function lineClass(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) {
    return 'eca-Diff-file';
  }
  if (line.startsWith('@@')) {
    return 'eca-Diff-hunk';
  }
  if (line.startsWith('+')) {
    return 'eca-Diff-added';
  }
  if (line.startsWith('-')) {
    return 'eca-Diff-removed';
  }
  return 'eca-Diff-context';
}

export function DiffView(props: DiffViewProps): JSX.Element {
  const lines = props.diff.replace(/\n$/, '').split('\n');
  const kind = diffKind(props.diff);
  return (
    <div className="eca-Diff">
      {props.path !== undefined && (
        <div className="eca-Diff-title">
          <span className="eca-Diff-path">{props.path}</span>
          {kind !== 'changed' && <span className={`eca-Diff-kind eca-Diff-kind-${kind}`}>{kind}</span>}
          {props.linesAdded !== undefined && <span className="eca-Diff-stat-added">+{props.linesAdded}</span>}
          {props.linesRemoved !== undefined && <span className="eca-Diff-stat-removed">-{props.linesRemoved}</span>}
        </div>
      )}
      <pre className="eca-Diff-body">
        {lines.map((line, index) => (
          <div key={index} className={lineClass(line)}>
            {line || ' '}
          </div>
        ))}
      </pre>
    </div>
  );
}
