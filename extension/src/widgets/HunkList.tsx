/**
 * A file change shown hunk by hunk (`details.hunks`, an eca-notebook extension of `fileChange`). While the call
 * waits for approval each hunk has a checkbox, all ticked: Approve applies the ticked ones. On the finished call the
 * hunks the user left out stay visible, struck through and marked "not applied", so the history says what the file
 * really got.
 */

import * as React from 'react';

import type { FileChangeHunk } from '../protocol';
import { lineClass } from './DiffView';

export interface HunkListProps {
  hunks: FileChangeHunk[];
  path: string;
  /** While waiting: the ids ticked now, and how to change them. Absent: read-only (a finished call). */
  chosen?: ReadonlySet<string>;
  onToggle?: (id: string, on: boolean) => void;
  disabled?: boolean;
}

function HunkBlock(props: {
  hunk: FileChangeHunk;
  chosen?: ReadonlySet<string>;
  onToggle?: (id: string, on: boolean) => void;
  disabled?: boolean;
}): JSX.Element {
  const { hunk, chosen, onToggle } = props;
  const lines = hunk.text.replace(/\n$/, '').split('\n');
  const [header, ...body] = lines;
  const leftOut = hunk.applied === false;
  const ticked = chosen ? chosen.has(hunk.id) : !leftOut;
  return (
    <div
      className={`eca-Hunk${ticked ? '' : ' eca-mod-unchosen'}${leftOut ? ' eca-mod-left-out' : ''}`}
      data-hunk-id={hunk.id}
    >
      <label className="eca-Hunk-header">
        {chosen && onToggle ? (
          <input
            type="checkbox"
            className="eca-hunk-toggle"
            data-hunk-id={hunk.id}
            checked={ticked}
            disabled={props.disabled}
            onChange={event => onToggle(hunk.id, event.currentTarget.checked)}
          />
        ) : null}
        <span className="eca-Diff-hunk">{header}</span>
        <span className="eca-Diff-stat-added">+{hunk.linesAdded}</span>
        <span className="eca-Diff-stat-removed">-{hunk.linesRemoved}</span>
        {leftOut && <span className="eca-Hunk-note">not applied</span>}
      </label>
      <pre className="eca-Diff-body">
        {body.map((line, index) => (
          <div key={index} className={lineClass(line)}>
            {line || ' '}
          </div>
        ))}
      </pre>
    </div>
  );
}

export function HunkList(props: HunkListProps): JSX.Element {
  // the totals of what will be (or was) written: the ticked hunks while waiting, the applied ones after
  const counts = (h: FileChangeHunk) => (props.chosen ? props.chosen.has(h.id) : h.applied !== false);
  const added = props.hunks.reduce((n, h) => n + (counts(h) ? h.linesAdded : 0), 0);
  const removed = props.hunks.reduce((n, h) => n + (counts(h) ? h.linesRemoved : 0), 0);
  return (
    <div className="eca-Diff eca-HunkList">
      <div className="eca-Diff-title">
        <span className="eca-Diff-path">{props.path}</span>
        <span className="eca-Diff-stat-added">+{added}</span>
        <span className="eca-Diff-stat-removed">-{removed}</span>
      </div>
      {props.hunks.map(hunk => (
        <HunkBlock
          key={hunk.id}
          hunk={hunk}
          chosen={props.chosen}
          onToggle={props.onToggle}
          disabled={props.disabled}
        />
      ))}
    </div>
  );
}
