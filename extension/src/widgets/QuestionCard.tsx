/**
 * The model's question (`ask_user` → `chat/askQuestion`), pinned above the composer while the turn waits for it:
 * one button per option (its label is the answer), a text field when a typed answer is allowed (Enter sends), and
 * Skip (the model is told the user did not answer). It disappears once answered, or when the server gives up on
 * it (the chat's Stop).
 */

import * as React from 'react';

import type { PendingQuestion } from '../questions';

export function QuestionCard(props: { question: PendingQuestion }): JSX.Element {
  const { params, answer } = props.question;
  const [text, setText] = React.useState('');
  const freeform = params.allowFreeform !== false;
  const send = (): void => {
    if (text.trim()) {
      answer(text.trim());
    }
  };
  return (
    <div className="eca-Question" role="group" aria-label="Question from the assistant">
      <div className="eca-Question-text">{params.question}</div>
      {params.options && params.options.length > 0 && (
        <div className="eca-Question-options">
          {params.options.map(option => (
            <button
              key={option.label}
              className="jp-mod-styled eca-Question-option"
              title={option.description ?? option.label}
              onClick={() => answer(option.label)}
            >
              <span className="eca-Question-label">{option.label}</span>
              {option.description && <span className="eca-Question-description">{option.description}</span>}
            </button>
          ))}
        </div>
      )}
      <div className="eca-Question-answer">
        {freeform && (
          <>
            <input
              className="jp-mod-styled eca-Question-input"
              placeholder="Type your answer…"
              value={text}
              onChange={event => setText(event.target.value)}
              onKeyDown={event => {
                if (event.key === 'Enter') {
                  event.preventDefault();
                  send();
                }
              }}
            />
            <button className="jp-mod-styled jp-mod-accept eca-Question-send" disabled={!text.trim()} onClick={send}>
              Answer
            </button>
          </>
        )}
        <button className="jp-mod-styled eca-Question-skip" onClick={() => answer(null)}>
          Skip
        </button>
      </div>
    </div>
  );
}
