import { test } from 'node:test';
import assert from 'node:assert/strict';

import { cellRow, firstLine, middleEllipsis, modelLabel, relativePath, visible } from '../src/labels';

test('long names are cut in the middle, keeping what tells them apart', () => {
  assert.equal(middleEllipsis('smollm2-135m', 22), 'smollm2-135m');
  const cut = middleEllipsis('qwen2.5-coder:7b-instruct-q4_K_M', 16);
  assert.equal([...cut].length, 16);
  assert.ok(cut.startsWith('qwen2.5') && cut.endsWith('q4_K_M') && cut.includes('…'), cut);
});

test('a model is shown by its name (its provider is the option group), the full id in the tooltip', () => {
  assert.deepEqual(modelLabel('local/smollm2-135m'), {
    label: 'smollm2-135m',
    provider: 'local',
    title: 'local/smollm2-135m'
  });
  assert.deepEqual(modelLabel('ollama/qwen3:4b'), { label: 'qwen3:4b', provider: 'ollama', title: 'ollama/qwen3:4b' });
  assert.equal(modelLabel('my-model').provider, '');
  const long = modelLabel('openai-compatible/meta-llama-3.1-70b-instruct-turbo');
  assert.ok(long.label.length <= 22 && long.label.endsWith('turbo'), long.label);
});

test('paths from the server are shown from the Jupyter root', () => {
  assert.equal(relativePath('/home/me/work/notebooks/05-data-analysis.ipynb', '/home/me/work'), 'notebooks/05-data-analysis.ipynb');
  assert.equal(relativePath('/home/me/work/a.py', '/home/me/work/'), 'a.py');
  assert.equal(relativePath('/home/me/workshop/a.py', '/home/me/work'), '/home/me/workshop/a.py', 'not inside');
  assert.equal(relativePath('/etc/hosts', null), '/etc/hosts');
  assert.equal(relativePath('notes.md', '/home/me'), 'notes.md');
});

test('@ rows of one notebook differ by cell number and first line', () => {
  const cell = (index: number, source: string) =>
    cellRow({ path: 'notebooks/05-data-analysis.ipynb', index, cellType: 'code', language: 'python', source });
  const rows = [cell(0, 'import pandas as pd'), cell(2, '\n  df = pd.read_csv("data.csv")\nprint(df)')];
  assert.deepEqual(
    rows.map(r => r.label),
    ['cell 1 · import pandas as pd', 'cell 3 · df = pd.read_csv("data.csv")']
  );
  assert.equal(rows[0].detail, 'notebooks/05-data-analysis.ipynb');
  assert.equal(firstLine('\n\n  x = 1\ny'), 'x = 1');
});

test('invisible and control characters in names are written out', () => {
  assert.equal(visible('report\u202etxt.exe'), 'report\\u202etxt.exe');
  assert.equal(visible('a\nfile.txt'), 'a\\nfile.txt');
  assert.equal(visible('x\u2066y\u200bz\u001b[31m\u0085'), 'x\\u2066y\\u200bz\\x1b[31m\\x85');
  assert.equal(visible('café · cell 3 — ok'), 'café · cell 3 — ok');
});
