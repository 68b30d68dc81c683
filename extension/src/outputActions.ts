/**
 * One click from what the user sees in a notebook: "Fix with ECA" on every error output (a button under the
 * traceback, and the output's context menu), "Explain" and "Add to chat" on any output (its context menu), and the
 * notebook side of the answers' code-block buttons (codeActions.ts).
 *
 * Fix opens the panel on a new chat and sends the cell, its traceback and the notebook (attached, so the notebook
 * tools work on it): the model answers with a per-cell edit the user approves. Explain sends the output (its text,
 * or the image it shows as an `image` context) with a question; Add to chat puts it in the composer as a chip.
 * The context menu is JupyterLab's usual place for such actions (selector `.jp-OutputArea-child`).
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { Cell, CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { decorateCodeBlocks, handleCodeActionClick, setCodeActionTarget } from './codeActions';
import { composeOutputs, composerInbox, explainPrompt, fixPrompt, outputParts, type InboxItem } from './outputCore';
import type { ChatContext } from './protocol';
import { IEcaChat } from './tokens';

export const FIX_COMMAND = 'eca:fix-output';
export const EXPLAIN_COMMAND = 'eca:explain-output';
export const ADD_OUTPUT_COMMAND = 'eca:add-output-to-chat';
const OUTPUT_SELECTOR = '.jp-OutputArea-child';
const FIX_BUTTON_CLASS = 'eca-FixButton';

/** An output of a code cell in an open notebook. */
interface OutputHit {
  panel: NotebookPanel;
  cell: CodeCell;
  cellIndex: number;
  outputIndex: number;
  output: any;
}

function isCodeCell(cell: Cell): cell is CodeCell {
  return cell.model.type === 'code' && Boolean((cell as CodeCell).outputArea);
}

function outputAt(panel: NotebookPanel, cell: CodeCell, cellIndex: number, outputIndex: number): OutputHit | null {
  const model = cell.outputArea.model;
  if (outputIndex < 0 || outputIndex >= model.length) {
    return null;
  }
  return { panel, cell, cellIndex, outputIndex, output: model.get(outputIndex).toJSON() };
}

/** The output a DOM node (a context-menu target) belongs to. */
function findOutput(notebooks: INotebookTracker, node: HTMLElement): OutputHit | null {
  let hit: OutputHit | null = null;
  notebooks.forEach(panel => {
    if (hit || !panel.node.contains(node)) {
      return;
    }
    panel.content.widgets.forEach((cell, cellIndex) => {
      if (hit || !isCodeCell(cell) || !cell.outputArea.node.contains(node)) {
        return;
      }
      cell.outputArea.widgets.forEach((child, outputIndex) => {
        if (!hit && child.node.contains(node)) {
          hit = outputAt(panel, cell, cellIndex, outputIndex);
        }
      });
    });
  });
  return hit;
}

function attachmentsOf(hit: OutputHit): { items: InboxItem[]; images: ChatContext[] } {
  const parts = outputParts(hit.output, hit.panel.context.path, hit.cellIndex);
  const items: InboxItem[] = [];
  if (parts.text) {
    items.push({ kind: 'output', output: parts.text });
  }
  if (parts.image) {
    items.push({ kind: 'image', image: parts.image });
  }
  return { items, images: parts.image ? [parts.image] : [] };
}

export const outputActionsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'eca-notebook:output-actions',
  description: 'Fix with ECA, Explain and Add to chat on notebook outputs; code-block actions in answers.',
  autoStart: true,
  requires: [IEcaChat, INotebookTracker],
  activate: (app: JupyterFrontEnd, chat: IEcaChat, notebooks: INotebookTracker): void => {
    const notebookOf = (hit: OutputHit): ChatContext => ({ type: 'file', path: hit.panel.context.path });

    const fix = async (hit: OutputHit): Promise<void> => {
      const output = hit.output;
      const shared: any = hit.cell.model.sharedModel;
      const message = fixPrompt({
        path: hit.panel.context.path,
        index: hit.cellIndex,
        source: shared.getSource(),
        ename: String(output.ename ?? 'Error'),
        evalue: String(output.evalue ?? ''),
        traceback: Array.isArray(output.traceback) ? output.traceback.join('\n') : '',
        cellId: typeof shared.getId === 'function' ? shared.getId() : hit.cell.model.id
      });
      chat.open();
      chat.client.newChat();
      await chat.client.prompt(message, [notebookOf(hit)]);
    };

    const explain = async (hit: OutputHit): Promise<void> => {
      const parts = outputParts(hit.output, hit.panel.context.path, hit.cellIndex);
      const question = explainPrompt(hit.panel.context.path, hit.cellIndex, hit.output.output_type === 'error');
      const message = composeOutputs(question, parts.text ? [parts.text] : []);
      chat.open();
      chat.client.newChat();
      await chat.client.prompt(message, [...(parts.image ? [parts.image] : []), notebookOf(hit)]);
    };

    const report = (error: unknown) => console.error('eca: output action failed', error);
    const hitOfMenu = (): OutputHit | null => {
      const node = app.contextMenuHitTest(n => n.classList.contains('jp-OutputArea-child'));
      return node ? findOutput(notebooks, node) : null;
    };

    app.commands.addCommand(FIX_COMMAND, {
      label: 'Fix with ECA',
      caption: 'Send the cell and its traceback to ECA and review the fix it proposes',
      isVisible: () => hitOfMenu()?.output.output_type === 'error',
      execute: () => {
        const hit = hitOfMenu();
        if (hit) {
          void fix(hit).catch(report);
        }
      }
    });
    app.commands.addCommand(EXPLAIN_COMMAND, {
      label: 'Explain with ECA',
      caption: 'Ask ECA what this output shows',
      execute: () => {
        const hit = hitOfMenu();
        if (hit) {
          void explain(hit).catch(report);
        }
      }
    });
    app.commands.addCommand(ADD_OUTPUT_COMMAND, {
      label: 'Add Output to ECA Chat',
      caption: 'Attach this output (its text or image) to the next ECA prompt',
      execute: () => {
        const hit = hitOfMenu();
        if (hit) {
          chat.open();
          composerInbox.put(attachmentsOf(hit).items);
        }
      }
    });
    app.contextMenu.addItem({ type: 'separator', selector: OUTPUT_SELECTOR, rank: 20 });
    app.contextMenu.addItem({ command: FIX_COMMAND, selector: OUTPUT_SELECTOR, rank: 21 });
    app.contextMenu.addItem({ command: EXPLAIN_COMMAND, selector: OUTPUT_SELECTOR, rank: 22 });
    app.contextMenu.addItem({ command: ADD_OUTPUT_COMMAND, selector: OUTPUT_SELECTOR, rank: 23 });

    // A "Fix with ECA" button under every error output, as outputs come and go.
    const decorate = (panel: NotebookPanel, cell: CodeCell): void => {
      const model = cell.outputArea.model;
      cell.outputArea.widgets.forEach((child, outputIndex) => {
        if (outputIndex >= model.length || model.get(outputIndex).type !== 'error') {
          return;
        }
        if (child.node.querySelector(`.${FIX_BUTTON_CLASS}`)) {
          return;
        }
        const button = document.createElement('button');
        button.type = 'button';
        button.className = `${FIX_BUTTON_CLASS} jp-mod-styled`;
        button.textContent = 'Fix with ECA';
        button.title = 'Send this cell and its traceback to ECA and review the fix it proposes';
        button.addEventListener('click', event => {
          event.preventDefault();
          const cellIndex = panel.content.widgets.indexOf(cell);
          const index = cell.outputArea.widgets.indexOf(child);
          const hit = cellIndex >= 0 ? outputAt(panel, cell, cellIndex, index) : null;
          if (hit) {
            void fix(hit).catch(report);
          }
        });
        child.node.appendChild(button);
      });
    };
    const hooked = new WeakSet<CodeCell>();
    const hookCells = (panel: NotebookPanel): void => {
      for (const cell of panel.content.widgets) {
        if (!isCodeCell(cell) || hooked.has(cell)) {
          continue;
        }
        hooked.add(cell);
        cell.outputArea.outputLengthChanged.connect(() => decorate(panel, cell));
        decorate(panel, cell);
      }
    };
    // The %eca widget's answers (rendered in the kernel, sanitised) get the same code-block buttons: added here, in
    // the page, when a widget's answer changes; their clicks are handled here too.
    const WIDGET_CODE = '.eca-chat pre:not(.eca-output)';
    const watchWidgets = (panel: NotebookPanel): void => {
      const root = panel.content.node;
      let scheduled = false;
      const observer = new MutationObserver(records => {
        if (scheduled || !records.some(r => r.target instanceof Element && r.target.closest('.eca-chat'))) {
          return;
        }
        scheduled = true;
        requestAnimationFrame(() => {
          scheduled = false;
          for (const chatNode of Array.from(root.querySelectorAll<HTMLElement>('.eca-chat'))) {
            decorateCodeBlocks(chatNode, 'pre:not(.eca-output)');
          }
        });
      });
      observer.observe(root, { childList: true, subtree: true });
      root.addEventListener('click', event => {
        const chatNode = event.target instanceof Element ? event.target.closest<HTMLElement>('.eca-chat') : null;
        if (chatNode && chatNode.querySelector(WIDGET_CODE)) {
          handleCodeActionClick(event, chatNode);
        }
      });
      panel.disposed.connect(() => observer.disconnect());
    };
    notebooks.widgetAdded.connect((_, panel) => {
      const later = () => requestAnimationFrame(() => hookCells(panel));
      watchWidgets(panel);
      void panel.context.ready.then(() => {
        later();
        panel.content.model?.cells.changed.connect(later);
      });
    });

    // The answers' code-block buttons act on the active notebook, each as one change on its shared model.
    setCodeActionTarget({
      insertBelow: code => {
        const notebook = notebooks.currentWidget?.content;
        const model = notebook?.model;
        if (!notebook || !model) {
          return false;
        }
        const index = notebook.activeCellIndex;
        model.sharedModel.transact(() => {
          model.sharedModel.insertCell(index + 1, { cell_type: 'code', source: code });
        });
        notebook.activeCellIndex = index + 1;
        return true;
      },
      replaceActive: code => {
        const notebook = notebooks.currentWidget?.content;
        const cell = notebook?.activeCell;
        if (!notebook?.model || !cell) {
          return false;
        }
        // the cell's own transaction: its undo (Ctrl+Z in the cell, or the notebook's when undo is document-wide)
        cell.model.sharedModel.transact(() => {
          cell.model.sharedModel.setSource(code);
        });
        return true;
      }
    });
  }
};
