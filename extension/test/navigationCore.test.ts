import { test } from 'node:test';
import assert from 'node:assert/strict';

import { languageOf, pathUnderRoot, toEditorLocations, toLspPosition } from '../src/navigationCore';

test('a server URI under the Jupyter root becomes its lab path, decoded', () => {
  assert.equal(pathUnderRoot('file:///work/ws/pkg/a.py', 'file:///work/ws'), 'pkg/a.py');
  assert.equal(pathUnderRoot('file:///work/ws/my%20dir/b.py', 'file:///work/ws/'), 'my dir/b.py');
  assert.equal(pathUnderRoot('file:///work/ws/a.py', 'file:///work/ws%20x'), null);
  assert.equal(pathUnderRoot('file:///work/wsx/a.py', 'file:///work/ws'), null, 'a sibling with the same prefix');
  assert.equal(pathUnderRoot('file:///elsewhere/a.py', 'file:///work/ws'), null);
  assert.equal(pathUnderRoot('file:///work/ws', 'file:///work/ws'), null);
  assert.equal(pathUnderRoot('file:///work/ws/a.py', undefined), null, 'no jupyter-lsp: no root URI');
  assert.equal(pathUnderRoot('untitled:a.py', 'file:///work/ws'), null);
});

test('the language comes from the extension, else the lab file type', () => {
  assert.equal(languageOf('pkg/a.py'), 'python');
  assert.equal(languageOf('A.PY'), 'python');
  assert.equal(languageOf('x.R'), 'r');
  assert.equal(languageOf('Makefile', 'Makefile'), 'makefile');
  assert.equal(languageOf('notes'), null);
});

test('positions: ECA is 1-based, LSP 0-based', () => {
  assert.deepEqual(toLspPosition({ line: 3, character: 5 }), { line: 2, character: 4 });
  assert.deepEqual(toLspPosition({ line: 0, character: 0 }), { line: 0, character: 0 });
});

test('LSP answers of every shape become 1-based locations', () => {
  const range = { start: { line: 0, character: 4 }, end: { line: 0, character: 9 } };
  const one = { uri: 'file:///w/a.py', range };
  const expected = {
    uri: 'file:///w/a.py',
    range: { start: { line: 1, character: 5 }, end: { line: 1, character: 10 } }
  };
  assert.deepEqual(toEditorLocations(null), []);
  assert.deepEqual(toEditorLocations(one), [expected]);
  assert.deepEqual(toEditorLocations([one, one]), [expected, expected]);
  const link = {
    targetUri: 'file:///w/a.py',
    targetRange: { start: { line: 0, character: 0 }, end: { line: 2, character: 0 } },
    targetSelectionRange: range
  };
  assert.deepEqual(toEditorLocations([link]), [expected], 'a LocationLink: the name, not the whole definition');
  assert.deepEqual(toEditorLocations([{ nonsense: true }]), []);
});
