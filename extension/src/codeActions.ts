/**
 * Code blocks in answers get Copy, "Insert below" (a new cell under the active one) and "Replace cell" (the active
 * cell's source). The buttons are added after the answer is rendered and sanitised (ours, not the model's HTML);
 * what they do on the notebook comes from the `CodeActionTarget` the output-actions plug-in registers — each is one
 * change on the notebook's shared model, so one undo takes it back.
 */

export const CODE_ACTIONS_CLASS = 'eca-CodeActions';
export const CODE_ACTION_ATTR = 'data-eca-code-action';

export type CodeAction = 'copy' | 'insert' | 'replace';

/** What the buttons do to the notebook; false when there is no notebook (or no active cell) to do it to. */
export interface CodeActionTarget {
  insertBelow(code: string): boolean;
  replaceActive(code: string): boolean;
}

let registered: CodeActionTarget | null = null;

/** The output-actions plug-in registers the active notebook's target here (null: none). */
export function setCodeActionTarget(target: CodeActionTarget | null): void {
  registered = target;
}

const LABELS: Record<CodeAction, [string, string]> = {
  copy: ['Copy', 'Copy the code'],
  insert: ['Insert below', 'Insert the code as a new cell below the active cell'],
  replace: ['Replace cell', "Replace the active cell's source with the code"]
};

/** The code of a block: its text, without the final newline the renderer adds. */
export function codeOf(pre: Element): string {
  return (pre.textContent ?? '').replace(/\n$/, '');
}

/** Put the buttons above every code block (`selector`) under `root` that has none yet. */
export function decorateCodeBlocks(root: HTMLElement, selector = 'pre'): void {
  for (const pre of Array.from(root.querySelectorAll(selector))) {
    if (pre.previousElementSibling?.classList.contains(CODE_ACTIONS_CLASS)) {
      continue;
    }
    const bar = root.ownerDocument.createElement('div');
    bar.className = CODE_ACTIONS_CLASS;
    for (const action of Object.keys(LABELS) as CodeAction[]) {
      const button = root.ownerDocument.createElement('button');
      button.type = 'button';
      button.className = 'eca-CodeAction jp-mod-styled';
      button.setAttribute(CODE_ACTION_ATTR, action);
      button.textContent = LABELS[action][0];
      button.title = LABELS[action][1];
      bar.appendChild(button);
    }
    pre.insertAdjacentElement('beforebegin', bar);
  }
}

/** Handle a click inside a rendered answer: true when it was one of our buttons. */
export function handleCodeActionClick(event: MouseEvent, root: HTMLElement): boolean {
  const target = event.target instanceof Element ? event.target : null;
  const button = target?.closest(`button[${CODE_ACTION_ATTR}]`);
  if (!button || !root.contains(button)) {
    return false;
  }
  event.preventDefault();
  const pre = button.parentElement?.nextElementSibling;
  if (!pre || pre.tagName !== 'PRE') {
    return true;
  }
  const code = codeOf(pre);
  const action = button.getAttribute(CODE_ACTION_ATTR) as CodeAction;
  let done = false;
  if (action === 'copy') {
    void navigator.clipboard?.writeText(code);
    done = true;
  } else if (action === 'insert') {
    done = registered?.insertBelow(code) ?? false;
  } else if (action === 'replace') {
    done = registered?.replaceActive(code) ?? false;
  }
  const label = LABELS[action][0];
  button.textContent = done ? (action === 'copy' ? 'Copied' : 'Done') : 'No active notebook';
  setTimeout(() => (button.textContent = label), 1500);
  return true;
}
