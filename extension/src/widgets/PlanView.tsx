/**
 * The agent's plan as a live checklist, pinned between the messages and the composer so it stays in sight while
 * the chat scrolls on. It shows the chat's latest `plan` content (published by the model's `update_plan` calls;
 * each replaces the one before, and `chat/open` replays them), so it is the same after reopening the chat.
 *
 * Each step has a checkbox for its status — checked when completed, half-checked while in progress (that step is
 * also highlighted) — and the files it involves. The list folds away on its own once every step is done; the
 * header still says how far the plan got, and a click opens it again.
 */

import * as React from 'react';

import type { PlanState } from '../model';
import type { PlanStep } from '../protocol';

const STATUS_LABEL: Record<PlanStep['status'], string> = {
  completed: 'done',
  in_progress: 'in progress',
  pending: 'to do'
};

function StepBox(props: { status: PlanStep['status'] }): JSX.Element {
  const box = React.useRef<HTMLInputElement>(null);
  React.useEffect(() => {
    if (box.current) {
      box.current.indeterminate = props.status === 'in_progress';
    }
  }, [props.status]);
  return (
    <input
      ref={box}
      type="checkbox"
      className="eca-Plan-check"
      checked={props.status === 'completed'}
      readOnly
      tabIndex={-1}
      aria-label={STATUS_LABEL[props.status] ?? props.status}
    />
  );
}

export interface PlanViewProps {
  plan: PlanState;
  version: number;
}

function PlanViewImpl(props: PlanViewProps): JSX.Element {
  const { plan } = props;
  const total = plan.steps.length;
  const done = plan.steps.filter(step => step.status === 'completed').length;
  const finished = total > 0 && done === total;
  const current = plan.steps.find(step => step.status === 'in_progress');
  const [open, setOpen] = React.useState(!finished);
  React.useEffect(() => setOpen(!finished), [finished]);
  return (
    <details
      className="eca-Plan"
      open={open}
      onToggle={event => setOpen((event.currentTarget as HTMLDetailsElement).open)}
      data-done={done}
      data-total={total}
    >
      <summary className="eca-Plan-header">
        <span className="eca-Plan-title">Plan</span>
        <span className="eca-Plan-progress">
          {done}/{total} done
        </span>
        {!open && current && <span className="eca-Plan-current">{current.description}</span>}
      </summary>
      {plan.explanation && <div className="eca-Plan-explanation">{plan.explanation}</div>}
      <ol className="eca-Plan-steps">
        {plan.steps.map((step, index) => (
          <li
            key={index}
            className="eca-Plan-step"
            data-status={step.status}
            aria-current={step.status === 'in_progress' ? 'step' : undefined}
            title={STATUS_LABEL[step.status] ?? step.status}
          >
            <StepBox status={step.status} />
            <div className="eca-Plan-body">
              <span className="eca-Plan-description">{step.description}</span>
              {step.files && step.files.length > 0 && (
                <span className="eca-Plan-files">
                  {step.files.map(file => (
                    <code key={file} className="eca-Plan-file" title={file}>
                      {file}
                    </code>
                  ))}
                </span>
              )}
            </div>
          </li>
        ))}
      </ol>
    </details>
  );
}

export const PlanView = React.memo(PlanViewImpl, (a, b) => a.plan === b.plan && a.version === b.version);
