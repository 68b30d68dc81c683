import { test } from 'node:test';
import assert from 'node:assert/strict';

import { errorOutputText, focusCellBlock, focusCellContext, stripAnsi } from '../src/cellFocus';

const TRACEBACK = [
  '\u001b[0;31m---------------------------------------------------------------------------\u001b[0m',
  '\u001b[0;31mIndexError\u001b[0m                                Traceback (most recent call last)',
  "Cell \u001b[0;32mIn[3], line 2\u001b[0m\n\u001b[1;32m      1\u001b[0m items \u001b[38;5;241m=\u001b[39m []\n" +
    '\u001b[0;32m----> 2\u001b[0m items[\u001b[38;5;241m-\u001b[39m\u001b[38;5;241m1\u001b[39m]',
  '\u001b[0;31mIndexError\u001b[0m: list index out of range'
];

test('an error output becomes its traceback as plain text', () => {
  const text = errorOutputText([
    { output_type: 'stream', name: 'stdout', text: 'hi\n' },
    { output_type: 'error', ename: 'IndexError', evalue: 'list index out of range', traceback: TRACEBACK }
  ])!;
  assert.ok(!text.includes('\u001b'), 'no terminal colours');
  assert.ok(text.includes('----> 2 items[-1]'), text);
  assert.ok(text.endsWith('IndexError: list index out of range'), text);
  assert.equal(errorOutputText([{ output_type: 'stream', text: 'ok' }]), undefined, 'no error: nothing');
  assert.equal(
    errorOutputText([{ output_type: 'error', ename: 'KeyError', evalue: "'a'", traceback: [] }]),
    "KeyError: 'a'",
    'no traceback: the error itself'
  );
  assert.equal(stripAnsi('\u001b]8;;file:///x\u0007link\u001b]8;;\u0007 \u001b[1;31mred\u001b[0m'), 'link red');
});

test('a long traceback keeps its end, where the error is', () => {
  const long = Array.from({ length: 400 }, (_, i) => `  frame ${i}`).concat(['ValueError: bad']);
  const text = errorOutputText([{ output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: long }], 500)!;
  assert.ok(text.length <= 500, String(text.length));
  assert.ok(text.startsWith('…\n') && text.endsWith('ValueError: bad'));
});

test('the cell goes after the message numbered from 1, with its error output', () => {
  const block = focusCellBlock({
    path: 'notebooks/05-data-analysis.ipynb',
    index: 5,
    cellType: 'code',
    language: 'python',
    source: 'items = []\nitems[-1]',
    error: 'IndexError: list index out of range'
  });
  assert.ok(block.includes('cell 6 (code) of notebooks/05-data-analysis.ipynb, which raised the error below'), block);
  assert.ok(block.includes('```python\nitems = []\nitems[-1]\n```'));
  assert.ok(block.endsWith('Its error output:\n```\nIndexError: list index out of range\n```'));
  const quiet = focusCellBlock({ path: 'a.ipynb', index: 0, cellType: 'code', language: 'python', source: 'x = 1' });
  assert.ok(!quiet.includes('error'), quiet);
});

test('the cell travels as a text context beside the message, labelled with its number from 1', () => {
  const ctx = focusCellContext({
    path: 'nb.ipynb', index: 2, cellType: 'code', language: 'python', source: 'items[-1]', error: 'IndexError: x'
  });
  assert.equal(ctx.type, 'text');
  assert.equal(ctx.label, 'cell 3 of nb.ipynb (its last run raised an error)');
  assert.ok(ctx.content.startsWith('The cell I last ran or edited: cell 3 (code) of nb.ipynb'), ctx.content);
  assert.ok(ctx.content.includes('IndexError: x'));
});
