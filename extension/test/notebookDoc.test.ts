import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  SharedNotebookLike,
  applyNotebookEdits,
  checkEdits,
  localPath,
  matchNotebookPath,
  pickNotebook,
  sourceSplice
} from '../src/notebookDoc';
import type { NotebookCellEdit } from '../src/protocol';

// The real shared model JupyterLab uses. @jupyter/ydoc is an ES module: require() loads it on Node >= 20.19; on an
// older Node the tests that need it are skipped.
let ydoc: typeof import('@jupyter/ydoc') | null = null;
try {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  ydoc = require('@jupyter/ydoc');
} catch {
  ydoc = null;
}
const needsYdoc = { skip: ydoc ? false : 'needs require() of ES modules (Node >= 20.19)' };

/** Yjs warns about reading cells before they are attached (as in JupyterLab itself): keep the test output clean. */
function quietly<T>(f: () => T): T {
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    return f();
  } finally {
    console.warn = warn;
  }
}

function code(id: string, source: string): any {
  return { id, cell_type: 'code', source, metadata: {}, outputs: [], execution_count: null };
}

/** A notebook as JupyterLab 4 makes it by default: per-cell undo managers (documentWideUndoRedo off). */
function notebook(documentWide = false) {
  const nb = quietly(() =>
    ydoc!.YNotebook.create({
      disableDocumentWideUndoRedo: !documentWide,
      data: { cells: [code('a', 'x = 1\ny = 2\n'), code('b', 'print(x)'), code('c', 'z = 3')], metadata: {} }
    })
  );
  nb.undoManager.clear(); // loading the notebook is not an undo step
  nb.cells.forEach(cell => cell.clearUndoHistory());
  return nb;
}

const apply = (nb: unknown, edits: NotebookCellEdit[]) =>
  quietly(() => applyNotebookEdits(nb as SharedNotebookLike, edits));
const sources = (nb: any) => nb.cells.map((cell: any) => `${cell.getId()}:${cell.getSource()}`);

test('paths: exact under the server root, else the longest tail; drive prefixes ignored', () => {
  assert.equal(matchNotebookPath('/home/u/work/a.ipynb', 'work/a.ipynb', '/home/u'), 'exact');
  assert.equal(matchNotebookPath('/home/u/work/a.ipynb', 'RTC:work/a.ipynb', '/home/u/'), 'exact');
  assert.equal(matchNotebookPath('/home/u/work/a.ipynb', 'work/a.ipynb', '~'), 'tail');
  assert.equal(matchNotebookPath('/home/u/work/a.ipynb', 'a.ipynb', null), 'tail');
  assert.equal(matchNotebookPath('/home/u/work/ba.ipynb', 'a.ipynb', null), null);
  assert.equal(matchNotebookPath('file:///home/u/my%20nb.ipynb', 'my nb.ipynb', '/home/u'), 'exact');
  assert.equal(matchNotebookPath('C:\\Users\\u\\a.ipynb', 'a.ipynb', 'C:\\Users\\u'), 'exact');
  assert.equal(localPath('RTC:dir/a.ipynb'), 'dir/a.ipynb');
  const candidates = [
    { path: 'a.ipynb', value: 'root' },
    { path: 'work/a.ipynb', value: 'work' }
  ];
  assert.equal(pickNotebook('/srv/x/work/a.ipynb', candidates, null), 'work');
  assert.equal(pickNotebook('/srv/x/a.ipynb', candidates, '/srv/x'), 'root');
  assert.equal(pickNotebook('/srv/x/b.ipynb', candidates, '/srv/x'), null);
});

test('sourceSplice keeps the common prefix and suffix and never splits a surrogate pair', () => {
  assert.deepEqual(sourceSplice('x = 1\ny = 2\n', 'x = 1\ny = 3\n'), { start: 10, end: 11, text: '3' });
  assert.deepEqual(sourceSplice('abc', 'abc'), { start: 3, end: 3, text: '' });
  assert.deepEqual(sourceSplice('', 'new'), { start: 0, end: 0, text: 'new' });
  const s = sourceSplice('a😀b', 'a😃b');
  assert.equal(s.start, 1);
  assert.equal('a😀b'.slice(0, s.start) + s.text + 'a😀b'.slice(s.end), 'a😃b');
});

test('checkEdits simulates the list in order and names the first refusal', () => {
  const cells: any[] = [
    { getId: () => 'a', getSource: () => 'x', cell_type: 'code' },
    { getId: () => 'b', getSource: () => 'y', cell_type: 'code' }
  ];
  assert.equal(checkEdits(cells, [{ action: 'replace', cellId: 'a', expectedSource: 'x', source: 'x2' }]), null);
  assert.equal(checkEdits(cells, [{ action: 'delete', cellId: 'zz' }]), 'unknown cell id zz');
  assert.equal(
    checkEdits(cells, [{ action: 'replace', cellId: 'b', expectedSource: 'old', source: 'new' }]),
    'cell b changed since the diff was made'
  );
  // A later edit sees what an earlier one did.
  assert.equal(
    checkEdits(cells, [
      { action: 'replace', cellId: 'a', expectedSource: 'x', source: 'x2' },
      { action: 'delete', cellId: 'a', expectedSource: 'x2' }
    ]),
    null
  );
  assert.equal(
    checkEdits(cells, [
      { action: 'insert', newCellId: 'n', index: 0, source: 's' },
      { action: 'move', cellId: 'n', index: 5 }
    ]),
    null
  );
  assert.match(checkEdits(cells, [{ action: 'insert', newCellId: 'a' }])!, /already exists/);
});

test('a refused edit list changes nothing', needsYdoc, () => {
  const nb = notebook();
  const before = sources(nb);
  const outcome = apply(nb, [
    { action: 'replace', cellId: 'a', expectedSource: 'x = 1\ny = 2\n', source: 'changed' },
    { action: 'delete', cellId: 'b', expectedSource: 'not what it is' }
  ]);
  assert.deepEqual(outcome, { applied: false, error: 'cell b changed since the diff was made', cellIds: ['a', 'b'] });
  assert.deepEqual(sources(nb), before);
  assert.equal(nb.undoManager.undoStack.length, 0);
  nb.dispose();
});

test('replace: Ctrl+Z in the cell (its own undo manager) restores source and metadata; redo reapplies', needsYdoc, () => {
  const nb = notebook();
  const a = nb.cells[0];
  const outcome = apply(nb, [
    {
      action: 'replace',
      cellId: 'a',
      expectedSource: 'x = 1\ny = 2\n',
      source: 'x = 1\ny = 20\n',
      metadata: { eca: { toolCallId: 't1' } }
    }
  ]);
  assert.deepEqual(outcome, { applied: true });
  assert.equal(a.getSource(), 'x = 1\ny = 20\n');
  assert.deepEqual(a.getMetadata('eca'), { toolCallId: 't1' });
  assert.equal(a.canUndo(), true, 'the cell editor can undo it');
  assert.equal(nb.cells[1].canUndo(), false);
  assert.equal(nb.undoManager.undoStack.length, 0, 'a pure source edit is not a notebook-level step');
  assert.equal(a.undo(), true);
  assert.equal(a.getSource(), 'x = 1\ny = 2\n');
  assert.equal(a.getMetadata('eca'), undefined);
  a.redo();
  assert.equal(a.getSource(), 'x = 1\ny = 20\n');
  // Our tracked origin was only for that transaction: the cell's manager is back to its own origins.
  assert.equal((a.undoManager as any).trackedOrigins.size, 2);
  nb.dispose();
});

test('insert, delete and move are one notebook-level undo step (command-mode z)', needsYdoc, () => {
  const nb = notebook();
  const outcome = apply(nb, [
    { action: 'insert', newCellId: 'n', index: 1, cellType: 'markdown', source: '# Title', metadata: { eca: {} } },
    { action: 'delete', cellId: 'b', expectedSource: 'print(x)' },
    { action: 'move', cellId: 'c', index: 0 },
    { action: 'replace', cellId: 'a', expectedSource: 'x = 1\ny = 2\n', source: 'x = 10\n' },
    {
      action: 'insert',
      newCellId: 'r',
      index: 99,
      cellType: 'code',
      source: 'restored',
      outputs: [{ output_type: 'stream', name: 'stdout', text: 'hi\n' }],
      executionCount: 4
    }
  ]);
  assert.deepEqual(outcome, { applied: true });
  assert.deepEqual(sources(nb), ['c:z = 3', 'a:x = 10\n', 'n:# Title', 'r:restored']);
  assert.equal(nb.cells[2].cell_type, 'markdown');
  const restored: any = nb.cells[3].toJSON();
  assert.equal(restored.execution_count, 4);
  assert.equal(restored.outputs[0].text, 'hi\n');
  assert.equal(nb.undoManager.undoStack.length, 1);
  quietly(() => nb.undo());
  assert.deepEqual(sources(nb), ['a:x = 1\ny = 2\n', 'b:print(x)', 'c:z = 3']);
  quietly(() => nb.redo());
  assert.deepEqual(sources(nb), ['c:z = 3', 'a:x = 10\n', 'n:# Title', 'r:restored']);
  nb.dispose();
});

test('an anchored insert goes next to its anchor wherever it is; at index when the anchor is gone', needsYdoc, () => {
  const nb = notebook();
  apply(nb, [
    { action: 'insert', newCellId: 'top', index: 0, source: 'added above meanwhile' },
    { action: 'insert', newCellId: 'n1', index: 1, anchorCellId: 'b', anchor: 'after', source: 'after b' },
    { action: 'insert', newCellId: 'n2', index: 1, anchorCellId: 'b', anchor: 'before', source: 'before b' },
    { action: 'insert', newCellId: 'n3', index: 1, anchorCellId: 'gone', source: 'at index 1' },
    { action: 'insert', newCellId: 'n4', index: 0, anchorCellId: 'c', source: 'no side given: before c' },
    {
      action: 'insert',
      newCellId: 'md',
      index: 99,
      cellType: 'markdown',
      source: '![x](attachment:x.png)',
      attachments: { 'x.png': { 'image/png': 'iVBORw0KGgo=' } }
    }
  ]);
  assert.deepEqual(
    nb.cells.map(cell => cell.getId()),
    ['top', 'n3', 'a', 'n2', 'b', 'n1', 'n4', 'c', 'md']
  );
  assert.deepEqual((nb.cells[8].toJSON() as any).attachments, { 'x.png': { 'image/png': 'iVBORw0KGgo=' } });
  nb.dispose();
});

test('a null metadata value removes the key (how the engine undo drops its provenance)', needsYdoc, () => {
  const nb = notebook();
  apply(nb, [{ action: 'replace', cellId: 'b', source: 'print(x)', metadata: { eca: { toolCallId: 't1' }, keep: 1 } }]);
  assert.deepEqual(nb.cells[1].getMetadata(), { eca: { toolCallId: 't1' }, keep: 1 });
  apply(nb, [{ action: 'replace', cellId: 'b', expectedSource: 'print(x)', source: 'print(x)', metadata: { eca: null } }]);
  assert.deepEqual(nb.cells[1].getMetadata(), { keep: 1 });
  nb.dispose();
});

test('with document-wide undo the whole edit is one step of the shared manager', needsYdoc, () => {
  const nb = notebook(true);
  apply(nb, [{ action: 'replace', cellId: 'a', expectedSource: 'x = 1\ny = 2\n', source: 'new' }]);
  assert.equal(nb.cells[0].undoManager, nb.undoManager);
  assert.equal(nb.cells[0].undo(), true);
  assert.equal(nb.cells[0].getSource(), 'x = 1\ny = 2\n');
  nb.dispose();
});
