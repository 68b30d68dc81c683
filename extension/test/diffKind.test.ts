import { test } from 'node:test';
import assert from 'node:assert/strict';

import { diffKind } from '../src/diffKind';

test('a deletion diff (to /dev/null) is a deleted file, whatever its body', () => {
  assert.equal(diffKind('--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a = 1\n-b = 2\n'), 'deleted');
  assert.equal(diffKind('--- a/f.bin\n+++ /dev/null\nBinary file f.bin deleted (2 KB)\n'), 'deleted');
  assert.equal(diffKind('--- a/empty.txt\n+++ /dev/null\n'), 'deleted');
});

test('a new file is created; an edit, even one removing every line, is a change', () => {
  assert.equal(diffKind('--- a/new.py\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n'), 'created');
  assert.equal(diffKind('--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n'), 'created');
  assert.equal(diffKind('--- a/f.py\n+++ b/f.py\n@@ -1,2 +0,0 @@\n-a\n-b\n'), 'changed');
  assert.equal(diffKind(''), 'changed');
});
