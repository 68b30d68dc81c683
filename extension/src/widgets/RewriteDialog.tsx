/**
 * The "Rewrite with ECA…" dialog: first the instruction, then the rewrite streaming in as a diff of the original
 * (the panel's unified-diff view), with Stop while it streams and Accept / Reject once it is over.
 *
 * Presentational: `rewrite.ts` owns the state (a {@link RewriteState}) and the actions, and re-renders on change.
 */

import * as React from 'react';

import { RewriteState, streamingDiff, unifiedDiff } from '../rewriteCore';
import { DiffView } from './DiffView';

export interface RewriteDialogProps {
  /** What is rewritten: "Selection in analysis.ipynb · cell 3" */
  title: string;
  original: string;
  /** The original's first line in its document (for the diff's hunk headers). */
  firstLine: number;
  /** Where the original is, for the diff's title: "lines 4–6". */
  where: string;
  state: RewriteState;
  prompt: string;
  onSubmit: (prompt: string) => void;
  onStop: () => void;
  onAccept: () => void;
  onReject: () => void;
  /** A problem applying the result (the text changed meanwhile). */
  applyError?: string | null;
}

function seconds(ms: number | null): string {
  return ms === null ? '' : ` in ${(ms / 1000).toFixed(1)} s`;
}

function status(state: RewriteState): string {
  switch (state.phase) {
    case 'starting':
      return 'Asking the model…';
    case 'streaming':
      return state.reasoning ? 'The model is thinking…' : 'Rewriting…';
    case 'done':
      if (state.error) {
        return `Stopped with an error: ${state.error}`;
      }
      return `${state.stopped ? 'Stopped' : 'Done'}${seconds(state.totalTimeMs)}`;
    case 'failed':
      return `The rewrite failed: ${state.error ?? 'unknown error'}`;
    default:
      return '';
  }
}

export function RewriteDialog(props: RewriteDialogProps): JSX.Element {
  const { state, original } = props;
  const [prompt, setPrompt] = React.useState(props.prompt);
  const acceptRef = React.useRef<HTMLButtonElement>(null);
  const rejectRef = React.useRef<HTMLButtonElement>(null);
  const rootRef = React.useRef<HTMLDivElement>(null);
  const asking = state.phase === 'asking';
  const over = !asking && !state.running;
  const canAccept = state.canAccept(original);

  React.useEffect(() => {
    // The focus stays in the dialog, so Escape (reject) reaches it: on the dialog itself while the rewrite streams (not
    // on Stop: a second Enter must not stop it), then on Accept (Enter accepts) or, with nothing to accept, on Reject.
    if (state.running) {
      rootRef.current?.focus();
    } else if (over) {
      (canAccept ? acceptRef : rejectRef).current?.focus();
    }
  }, [state.running, over, canAccept]);

  const submit = () => {
    if (prompt.trim()) {
      props.onSubmit(prompt.trim());
    }
  };

  const onKeyDown = (event: React.KeyboardEvent) => {
    // JupyterLab's shortcuts (notebook command mode, Ctrl+S…) must not see what is typed here.
    event.stopPropagation();
    if (event.key === 'Escape') {
      event.preventDefault();
      props.onReject();
    }
  };

  let diff: { diff: string; added?: number; removed?: number } | null = null;
  if (!asking) {
    if (state.running) {
      diff = { diff: state.text ? streamingDiff(original, state.text) : original.split('\n').map(l => ` ${l}`).join('\n') };
    } else if (state.text) {
      const summary = unifiedDiff(original, state.result(original), 3, props.firstLine);
      diff = { diff: summary.diff, added: summary.added, removed: summary.removed };
    }
  }

  return (
    <div
      ref={rootRef}
      tabIndex={-1}
      className="eca-RewriteDialog"
      data-phase={state.phase}
      role="dialog"
      aria-label="Rewrite with ECA"
      onKeyDown={onKeyDown}
    >
      <div className="eca-RewriteDialog-header">
        <span className="eca-RewriteDialog-title">Rewrite with ECA</span>
        <span className="eca-RewriteDialog-target">{props.title}</span>
      </div>
      {asking ? (
        <>
          <input
            className="eca-RewriteDialog-input jp-mod-styled"
            type="text"
            autoFocus
            placeholder="How should it change? e.g. “use pathlib”, “add type hints”, “vectorize this loop”"
            value={prompt}
            onChange={event => setPrompt(event.target.value)}
            onKeyDown={event => {
              if (event.key === 'Enter' && !event.shiftKey) {
                event.preventDefault();
                submit();
              }
            }}
          />
          <pre className="eca-RewriteDialog-original">{original}</pre>
        </>
      ) : (
        <>
          <div className="eca-RewriteDialog-prompt">{props.prompt}</div>
          <div className="eca-RewriteDialog-status" data-error={state.error ? 'true' : undefined}>
            {status(state)}
            {state.model ? <span className="eca-RewriteDialog-model"> · {state.model}</span> : null}
          </div>
          {diff && (
            <div className="eca-RewriteDialog-diff">
              <DiffView
                diff={diff.diff}
                path={diff.added !== undefined ? props.where : undefined}
                linesAdded={diff.added}
                linesRemoved={diff.removed}
              />
            </div>
          )}
          {props.applyError && <div className="eca-RewriteDialog-applyError">{props.applyError}</div>}
        </>
      )}
      <div className="eca-RewriteDialog-buttons">
        {asking && (
          <button className="jp-Button jp-mod-styled jp-mod-accept eca-rewrite-submit" disabled={!prompt.trim()} onClick={submit}>
            Rewrite
          </button>
        )}
        {state.running && (
          <button className="jp-Button jp-mod-styled jp-mod-warn eca-rewrite-stop" onClick={props.onStop}>
            Stop
          </button>
        )}
        {!asking && !state.running && (
          <button
            ref={acceptRef}
            className="jp-Button jp-mod-styled jp-mod-accept eca-rewrite-accept"
            disabled={!canAccept}
            onClick={props.onAccept}
          >
            Accept
          </button>
        )}
        <button ref={rejectRef} className="jp-Button jp-mod-styled jp-mod-reject eca-rewrite-reject" onClick={props.onReject}>
          {asking ? 'Cancel' : 'Reject'}
        </button>
      </div>
    </div>
  );
}
