import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Questions } from '../src/questions';

test('questions of a chat are answered in order; an answer settles the request once', async () => {
  let changes = 0;
  const questions = new Questions(() => (changes += 1));
  const first = questions.ask({ chatId: 'c', question: 'One?', allowFreeform: true });
  const second = questions.ask({ chatId: 'c', question: 'Two?', allowFreeform: false, options: [{ label: 'A' }] });
  assert.equal(questions.get('c')?.params.question, 'One?');
  const shown = questions.get('c')!;
  shown.answer('yes');
  shown.answer('again'); // ignored
  assert.deepEqual(await first, { answer: 'yes', cancelled: false });
  assert.equal(questions.get('c')?.params.question, 'Two?');
  questions.get('c')!.answer(null);
  assert.deepEqual(await second, { cancelled: true });
  assert.equal(questions.get('c'), undefined);
  assert.ok(changes >= 4);
});

test('a request the server cancels leaves the panel', async () => {
  const questions = new Questions(() => undefined);
  const controller = new AbortController();
  const asked = questions.ask({ chatId: 'c', question: 'Still there?', allowFreeform: true }, controller.signal);
  const pending = questions.get('c')!;
  controller.abort();
  assert.deepEqual(await asked, { cancelled: true });
  assert.equal(questions.get('c'), undefined);
  pending.answer('late'); // nothing left to settle
});
