import { test } from 'node:test';
import assert from 'node:assert/strict';

import { contextLabel, mentionOf } from '../src/completion';
import {
  ComposerInbox,
  capText,
  composeOutputs,
  fixPrompt,
  outputParts,
  stripAnsi,
  type InboxItem
} from '../src/outputCore';

const TRACEBACK = [
  '\u001b[0;31m---------------------------------------------------------------------------\u001b[0m',
  '\u001b[0;31mKeyError\u001b[0m                                  Traceback (most recent call last)',
  "\u001b[0;31mKeyError\u001b[0m: 'west'"
];

test('an error output attaches its traceback without colours', () => {
  const parts = outputParts(
    { output_type: 'error', ename: 'KeyError', evalue: "'west'", traceback: TRACEBACK },
    'work/analysis.ipynb',
    2
  );
  assert.equal(parts.image, null);
  assert.equal(parts.text?.label, 'analysis.ipynb · cell 3 · output');
  assert.ok(parts.text?.text.endsWith("KeyError: 'west'"));
  assert.ok(!parts.text?.text.includes('\u001b'));
});

test('a plot attaches its image as an image context, not its <Figure> text', () => {
  const parts = outputParts(
    { output_type: 'display_data', data: { 'image/png': 'iVBOR\nw0KGgo=\n', 'text/plain': '<Figure size 640x480 with 1 Axes>' } },
    'plots.ipynb',
    0
  );
  assert.deepEqual(parts.image, { type: 'image', mediaType: 'image/png', base64: 'iVBORw0KGgo=', name: 'plots.ipynb cell 1' });
  assert.equal(parts.text, null);
  assert.deepEqual(contextLabel(parts.image!), { label: 'plots.ipynb cell 1', detail: 'image/png', icon: 'image' });
});

test('a stream output attaches its text, long ones keep their start and end', () => {
  const long = 'a'.repeat(20000) + 'THE END';
  const parts = outputParts({ output_type: 'stream', name: 'stdout', text: [long] }, 'n.ipynb', 0);
  assert.ok(parts.text!.text.length < 12_200 && parts.text!.text.endsWith('THE END'));
  assert.equal(capText('short'), 'short');
  assert.equal(stripAnsi('\u001b[1;32mok\u001b[0m'), 'ok');
  assert.equal(
    composeOutputs('Explain', [parts.text!].map(t => ({ ...t, text: 'x = 1' }))),
    'Explain\n\nOutput of cell 1 of n.ipynb:\n```\nx = 1\n```'
  );
});

test('the fix prompt names the cell and carries its source and the traceback', () => {
  const message = fixPrompt({
    path: 'analysis.ipynb',
    index: 2,
    source: 'share = sales["west"]',
    ename: 'KeyError',
    evalue: "'west'",
    traceback: TRACEBACK.join('\n'),
    cellId: 'c3'
  });
  assert.ok(message.startsWith("Fix the error in cell 3 (id c3) of analysis.ipynb: KeyError: 'west'"));
  assert.ok(message.includes('```python\nshare = sales["west"]\n```'));
  assert.ok(message.includes("KeyError: 'west'\n```") && !message.includes('\u001b'));
});

test('a kernel variable completes as @name with its type and shape', () => {
  const context = {
    type: 'mcpResource' as const,
    server: 'kernel',
    uri: 'kernel:sales',
    name: 'sales',
    description: 'DataFrame shape=(3, 2)',
    mimeType: 'text/plain'
  };
  assert.deepEqual(contextLabel(context), { label: 'sales', detail: 'DataFrame shape=(3, 2)', icon: 'variable' });
  assert.equal(mentionOf(context), '@sales');
});

test('the inbox keeps what arrives before the composer listens', () => {
  const inbox = new ComposerInbox();
  const item: InboxItem = { kind: 'image', image: { type: 'image', mediaType: 'image/png', base64: 'AA==' } };
  inbox.put([item]);
  const got: InboxItem[][] = [];
  const stop = inbox.subscribe(items => got.push(items));
  inbox.put([item]);
  stop();
  inbox.put([item]);
  assert.equal(got.length, 2);
});
