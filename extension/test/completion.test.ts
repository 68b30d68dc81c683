import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  cellMention,
  composeMessage,
  contextLabel,
  findTrigger,
  insertMention,
  mentionOf,
  replaceTrigger
} from '../src/completion';

test('"/" completes only as the first word; "@" anywhere after a space', () => {
  assert.deepEqual(findTrigger('/doc', 4), { kind: 'command', query: 'doc', start: 0, end: 4 });
  assert.equal(findTrigger('/doctor now', 11), null);
  assert.equal(findTrigger('see /doc', 8), null);
  assert.deepEqual(findTrigger('look at @src/ma', 15), { kind: 'context', query: 'src/ma', start: 8, end: 15 });
  assert.deepEqual(findTrigger('@', 1), { kind: 'context', query: '', start: 0, end: 1 });
  assert.equal(findTrigger('mail me@example.com', 19), null, 'an @ inside a word is not a trigger');
  assert.equal(findTrigger('look at @src done', 17), null, 'the caret left the token');
});

test('replacing a trigger keeps the rest of the text', () => {
  const text = 'fix @hel please';
  const trigger = findTrigger(text, 8)!;
  assert.deepEqual(replaceTrigger(text, trigger, ''), { text: 'fix please', caret: 4 });
  const command = findTrigger('/do', 3)!;
  assert.deepEqual(replaceTrigger('/do', command, '/doctor '), { text: '/doctor ', caret: 8 });
});

test('attached cells are appended to the message as fenced blocks naming their notebook', () => {
  const message = composeMessage('  why does this fail?  ', [
    { path: 'work/a.ipynb', index: 2, cellType: 'code', language: 'python', source: 'x = 1/0' }
  ]);
  assert.equal(message, 'why does this fail?\n\nCell 3 (code) of work/a.ipynb:\n```python\nx = 1/0\n```');
  const fenced = composeMessage('q', [
    { path: 'b.ipynb', index: 0, cellType: 'markdown', language: 'python', source: '```\ncode\n```' }
  ]);
  assert.ok(fenced.includes('~~~~markdown\n```\ncode\n```\n~~~~'), 'a cell holding ``` gets another fence');
});

test('context labels are short; details keep the full path', () => {
  assert.deepEqual(contextLabel({ type: 'file', path: 'src/app/main.py', linesRange: { start: 3, end: 9 } }), {
    label: 'main.py:3-9',
    detail: 'src/app/main.py',
    icon: 'file'
  });
  assert.deepEqual(
    contextLabel({
      type: 'file',
      path: '/w/geometry/shapes.py',
      linesRange: { start: 8, end: 15 },
      description: 'class Circle'
    }),
    { label: 'class Circle', detail: 'shapes.py:8-15 · /w/geometry/shapes.py', icon: 'file' },
    'a code symbol shows its kind and name, then its file and lines'
  );
  assert.equal(contextLabel({ type: 'directory', path: 'src/app/' }).label, 'app/');
  assert.deepEqual(contextLabel({ type: 'git', description: 'Git: main · 1 staged' }), {
    label: 'git',
    detail: 'Git: main · 1 staged',
    icon: 'git'
  });
  assert.equal(contextLabel({ type: 'git', part: 'diff' }).label, 'git:diff');
  assert.equal(
    contextLabel({
      type: 'cursor',
      path: 'a.py',
      position: { start: { line: 4, character: 0 }, end: { line: 4, character: 0 } }
    }).label,
    'a.py:4'
  );
});

test('a picked context leaves a short mention where @query was typed', () => {
  const text = 'compare @a.p with the other';
  const trigger = findTrigger(text, 'compare @a.p'.length)!;
  assert.deepEqual(insertMention(text, trigger, mentionOf({ type: 'file', path: '/w/src/a.py' })), {
    text: 'compare @a.py with the other',
    caret: 'compare @a.py '.length
  });
  const end = 'explain @Circ';
  assert.deepEqual(
    insertMention(
      end,
      findTrigger(end, end.length)!,
      mentionOf({ type: 'file', path: '/w/shapes.py', linesRange: { start: 8, end: 15 }, description: 'class Circle' })
    ),
    { text: 'explain @Circle ', caret: 'explain @Circle '.length }
  );
  assert.equal(mentionOf({ type: 'file', path: '/w/a.py', linesRange: { start: 2, end: 4 } }), '@a.py:2-4');
  assert.equal(mentionOf({ type: 'directory', path: '/w/src/' }), '@src/');
  assert.equal(mentionOf({ type: 'git', part: 'diff' }), '@git:diff');
  assert.equal(mentionOf({ type: 'repoMap' }), '@repoMap');
  assert.equal(
    cellMention({ path: 'nb/analysis.ipynb', index: 0, cellType: 'code', language: 'python', source: 'x' }),
    '@analysis.ipynb:cell1'
  );
});
