import { test } from 'node:test';
import assert from 'node:assert/strict';

import { RewriteState, diffLines, keepEdges, locateOriginal, streamingDiff, unifiedDiff } from '../src/rewriteCore';

const ops = (before: string, after: string) => diffLines(before, after).map(l => `${l.op}${l.text}`);

test('a line diff: common lines kept, removals before additions in each change', () => {
  assert.deepEqual(ops('a\nb\nc', 'a\nB\nc'), [' a', '-b', '+B', ' c']);
  assert.deepEqual(ops('a\nb\nc\n', 'a\nc\n'), [' a', '-b', ' c'], 'a trailing newline is not a line');
  assert.deepEqual(ops('', 'x\ny'), ['+x', '+y']);
  assert.deepEqual(ops('x\ny', ''), ['-x', '-y']);
  assert.deepEqual(ops('same', 'same'), [' same']);
  assert.deepEqual(
    ops('for i in range(n):\n    total += xs[i]\nprint(total)', 'total = sum(xs)\nprint(total)'),
    ['-for i in range(n):', '-    total += xs[i]', '+total = sum(xs)', ' print(total)']
  );
  assert.deepEqual(ops('1\n2\n3\n4', '0\n1\n3\n4\n5'), ['+0', ' 1', '-2', ' 3', ' 4', '+5']);
});

test('a long diff is cut into hunks with context and @@ headers numbered from the original first line', () => {
  const before = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join('\n');
  const after = before.replace('line 50', 'LINE 50');
  const { diff, added, removed } = unifiedDiff(before, after, 3, 11);
  assert.equal(added, 1);
  assert.equal(removed, 1);
  assert.deepEqual(diff.split('\n'), [
    '@@ -57,7 +57,7 @@',
    ' line 47',
    ' line 48',
    ' line 49',
    '-line 50',
    '+LINE 50',
    ' line 51',
    ' line 52',
    ' line 53'
  ]);
  const short = unifiedDiff('a\nb', 'a\nc');
  assert.equal(short.diff, ' a\n-b\n+c', 'a short diff shows every line, no header');
});

test('the rewrite state follows the streamed contents', () => {
  const state = new RewriteState();
  assert.equal(state.phase, 'asking');
  state.start();
  assert.ok(state.running);
  state.apply({ type: 'started' });
  state.apply({ type: 'reasoning' });
  assert.ok(state.reasoning);
  state.apply({ type: 'text', text: '```python\nx = 1' });
  state.apply({ type: 'text', text: '\n```' });
  assert.equal(state.phase, 'streaming');
  assert.ok(!state.canAccept('x = 0'), 'not before it is over');
  state.apply({ type: 'replace', text: 'x = 1' });
  state.apply({ type: 'finished', totalTimeMs: 1234 });
  assert.equal(state.phase, 'done');
  assert.equal(state.text, 'x = 1');
  assert.equal(state.totalTimeMs, 1234);
  assert.ok(state.canAccept('x = 0'));
  assert.ok(!state.canAccept('x = 1'), 'nothing changed: nothing to accept');

  const failed = new RewriteState();
  failed.start();
  failed.apply({ type: 'error', message: 'model timed out' });
  failed.apply({ type: 'finished', totalTimeMs: 5 });
  assert.equal(failed.phase, 'failed');
  assert.ok(!failed.canAccept('x'));

  const partial = new RewriteState();
  partial.start();
  partial.apply({ type: 'text', text: 'y = 2' });
  partial.apply({ type: 'error', message: 'cut off' });
  partial.apply({ type: 'finished', totalTimeMs: 5 });
  assert.equal(partial.phase, 'done', 'what streamed before an error can still be taken');
});

test('the original is found where it was, or at its only other place, or not at all', () => {
  const source = 'a = 1\nb = 2\n';
  assert.deepEqual(locateOriginal(source, 'b = 2', 6, 11), { start: 6, end: 11 });
  assert.deepEqual(locateOriginal('# new\n' + source, 'b = 2', 6, 11), { start: 12, end: 17 }, 'moved by an edit above');
  assert.equal(locateOriginal('a = 1\nb = 3\n', 'b = 2', 6, 11), null, 'edited');
  assert.equal(locateOriginal('x\nx\n', 'x', 4, 5), null, 'ambiguous');
});

test('while streaming, the original lines the rewrite has not reached are not shown as removed', () => {
  const original = 'for i in range(len(xs)):\n    print(xs[i])\nprint("done")';
  assert.equal(streamingDiff(original, 'for x in xs:'), '-for i in range(len(xs)):\n+for x in xs:\n …');
  assert.equal(
    streamingDiff(original, 'for x in xs:\n    print(x)\nprint("done")'),
    '-for i in range(len(xs)):\n-    print(xs[i])\n+for x in xs:\n+    print(x)\n print("done")'
  );
  assert.equal(streamingDiff('a\nb\nc\nd', 'a\nb\nc'), ' a\n b\n c\n …', 'matched lines set how far it got');
  assert.equal(streamingDiff('a', ''), ' …');
});

test('the rewrite keeps the line breaks the original starts and ends with', () => {
  assert.equal(keepEdges('a = 1\nb = 2\n', 'c = 3'), 'c = 3\n', 'whole lines selected: the next line stays apart');
  assert.equal(keepEdges('x\n\n', 'y\n'), 'y\n\n');
  assert.equal(keepEdges('x\n    ', 'y'), 'y\n    ', 'up to the next line\'s indentation');
  assert.equal(keepEdges('\nx', 'y'), '\ny');
  assert.equal(keepEdges('    return x', '    return y'), '    return y', 'nothing to keep');
  assert.equal(keepEdges('x', 'y\n'), 'y\n', 'the rewrite\'s own ending is left alone');
  const state = new RewriteState();
  state.start();
  state.apply({ type: 'text', text: 'names = [n for n in xs]' });
  state.apply({ type: 'finished', totalTimeMs: 1 });
  assert.equal(state.result('names = []\nfor n in xs: names.append(n)\n'), 'names = [n for n in xs]\n');
  assert.ok(!state.canAccept('names = [n for n in xs]\n'), 'the same once the edges are back: nothing to accept');
});
